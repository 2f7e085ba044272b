"""Render the MuJoCo robot-rig episodes in this folder (scripted repeats and their twins).

One fixed camera over a table with a three-joint arm (kinematic replay: joint angles are set
along a scripted trajectory, no physics) and three loose blocks. An episode is a trajectory seed
(the same seed = the same arm motion, replayed) and a layout seed (where the blocks stand).
Every episode rests 2 s at the rig's home pose before it moves. 160x120, 10 fps, 12 s, x264 CRF 18.

Run from the repository root (needs ``pip install mujoco`` and software EGL, ``libegl1``)::

    MUJOCO_GL=egl python tests/data/mujoco/render_rig.py [--all]

Only missing files are rendered unless ``--all`` is given.

The mp4 files are committed (rendering takes about a minute of CPU); tests/verdict_suites.py
uses them (suite ``mujoco``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from tests.footage import write_video  # noqa: E402

SIZE = (160, 120)
FPS = 10.0
SECONDS = 12.0
HOME_S = 2.0
HOME = (0.0, -0.6, 1.2)
#: (trajectory, layout) of every episode rendered.
EPISODES = ((1, 1), (1, 2), (2, 1), (1, 3), (1, 4), (3, 1), (2, 2), (1, 11), (1, 12), (2, 11))
#: Near-twin layouts: layout -> (base layout, block moved, (dx, dy) metres). A scripted run with one
#: block a few centimetres from where it stood (issue 33: twins PDQ cannot tell from a copy).
NUDGED = {11: (1, 0, (0.06, 0.0)), 12: (1, 2, (0.0, -0.05))}

XML = """
<mujoco>
  <visual><global offwidth="320" offheight="240"/></visual>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1=".55 .5 .45" rgb2=".45 .42 .4" width="64" height="64"/>
    <material name="table" texture="grid" texrepeat="6 6"/>
  </asset>
  <worldbody>
    <light pos="0 -0.4 1.5" dir="0 0.2 -1" diffuse=".9 .9 .9"/>
    <geom type="plane" size="0.6 0.6 0.01" material="table"/>
    <geom type="box" pos="0 0.55 0.15" size="0.6 0.02 0.15" rgba=".3 .35 .4 1"/>
    <body name="base" pos="0 -0.3 0.05">
      <geom type="cylinder" size="0.06 0.05" rgba=".2 .2 .2 1"/>
      <joint name="j0" type="hinge" axis="0 0 1"/>
      <body pos="0 0 0.05">
        <joint name="j1" type="hinge" axis="1 0 0"/>
        <geom type="capsule" fromto="0 0 0 0 0.32 0" size="0.035" rgba=".85 .8 .7 1"/>
        <body pos="0 0.32 0">
          <joint name="j2" type="hinge" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0 0.25 0" size="0.03" rgba=".8 .75 .65 1"/>
          <body pos="0 0.25 0"><geom type="box" size="0.045 0.03 0.04" rgba=".15 .15 .18 1"/></body>
        </body>
      </body>
    </body>
    OBJECTS
  </worldbody>
</mujoco>
"""


def model(layout: int) -> mujoco.MjModel:
    base, moved, (dx, dy) = NUDGED.get(layout, (layout, -1, (0.0, 0.0)))
    rng = np.random.default_rng(7_000 + base)
    objs = []
    for k in range(3):
        x, y = rng.uniform(-0.42, 0.42), rng.uniform(-0.05, 0.42)
        if k == moved:
            x, y = x + dx, y + dy
        c = rng.uniform(0.1, 0.9, 3)
        objs.append(f'<geom type="box" pos="{x:.3f} {y:.3f} 0.025" size="0.025 0.025 0.025" '
                    f'rgba="{c[0]:.2f} {c[1]:.2f} {c[2]:.2f} 1"/>')
    return mujoco.MjModel.from_xml_string(XML.replace("OBJECTS", "\n".join(objs)))


def joints(trajectory: int, t: float) -> tuple[float, float, float]:
    """The scripted arm motion: home pose, then smooth sinusoids fixed by the trajectory seed."""
    if t < HOME_S:
        return HOME
    rng = np.random.default_rng(9_000 + trajectory)
    tau = t - HOME_S
    ramp = min(1.0, tau / 1.5)
    out = []
    for k in range(3):
        f = rng.uniform(0.08, 0.3, 2)
        ph = rng.uniform(0, 2 * np.pi, 2)
        amp = rng.uniform(0.3, 0.7, 2)
        a = HOME[k] + float(np.sum(amp * (np.sin(2 * np.pi * f * tau + ph) - np.sin(ph))))
        out.append(HOME[k] + ramp * (a - HOME[k]))
    return out[0], out[1], out[2]


def render(trajectory: int, layout: int) -> list[np.ndarray]:
    m = model(layout)
    d = mujoco.MjData(m)
    r = mujoco.Renderer(m, SIZE[1], SIZE[0])
    cam = mujoco.MjvCamera()
    cam.lookat[:] = (0.0, 0.08, 0.05)
    cam.distance, cam.elevation, cam.azimuth = 1.25, -60.0, 90.0
    frames = []
    for i in range(int(SECONDS * FPS)):
        d.qpos[:] = joints(trajectory, i / FPS)
        mujoco.mj_forward(m, d)
        r.update_scene(d, camera=cam)
        frames.append(r.render().copy())
    r.close()
    return frames


def main() -> None:
    for traj, lay in EPISODES:
        out = HERE / f"t{traj}-l{lay}.mp4"
        if out.exists() and "--all" not in sys.argv:
            continue  # renders are not bit-identical across machines: keep what tests measured
        write_video(out, render(traj, lay), fps=FPS, options={"crf": "18"})
        print(out.name, out.stat().st_size)


if __name__ == "__main__":
    main()
