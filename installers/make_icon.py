"""Draw the application icon (two overlapping discs) into resources/icons/.

Run once after changing the design: ``python installers/make_icon.py``. Needs Pillow
(a dev dependency); the product itself only reads the generated PNG/ICO files.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageChops, ImageDraw

ROOT = Path(__file__).resolve().parents[1]


def draw(size: int = 512) -> Image.Image:
    """The icon at ``size`` pixels: a blue and an orange disc, their overlap highlighted."""
    def disc(cx: float) -> Image.Image:
        mask = Image.new("L", (size, size), 0)
        r = size * 0.30
        ImageDraw.Draw(mask).ellipse((cx - r, size * 0.5 - r, cx + r, size * 0.5 + r), fill=255)
        return mask

    left, right = disc(size * 0.37), disc(size * 0.63)
    both = ImageChops.multiply(left, right)
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    img.paste((37, 99, 235, 255), (0, 0), left)
    img.paste((234, 88, 12, 255), (0, 0), right)
    img.paste((250, 204, 21, 255), (0, 0), both)
    return img


def main() -> None:
    out = ROOT / "resources" / "icons"
    out.mkdir(parents=True, exist_ok=True)
    img = draw()
    img.resize((256, 256), Image.LANCZOS).save(out / "overlap.png")
    img.save(out / "overlap.ico", sizes=[(16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (128, 128),
                                          (256, 256)])


if __name__ == "__main__":
    main()
