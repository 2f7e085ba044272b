"""Robot-learning datasets written in the layouts their own tools write (for reader tests).

* ALOHA / ACT ``episode_N.hdf5`` (``record_episodes.py``): raw ``/observations/images/<cam>``
  ``(T, H, W, 3)`` chunked per frame, or with ``compress``: JPEG bytes (quality 50, encoded by
  OpenCV from the RGB arrays, i.e. with red and blue swapped) padded to one width, and
  ``/compress_len`` ``(cams, T)`` float32;
* robomimic / LIBERO (``dataset_states_to_obs.py``): ``data/demo_N/obs/<cam>`` gzip-compressed,
  ``data.attrs["env_args"]`` JSON with ``env_kwargs.control_freq``;
* RLDS / TFDS: ``features.json`` (TFDS's proto-JSON schema), ``dataset_info.json`` and
  ``<name>-train.tfrecord-NNNNN-of-NNNNN`` shards, one ``tf.train.Example`` per episode (written
  here with an independent protobuf encoder and TFRecord framing, CRC32C from google-crc32c);
* LeRobot v3 with image cameras (``dtype: image``): Hugging Face ``Image`` structs
  ``{bytes, path}`` of PNGs in ``data/chunk-000/file-000.parquet`` beside ``episode_index``,
  ``frame_index`` and ``timestamp``;
* diffusion-policy / UMI zarr ReplayBuffer: ``data/<cam>`` ``(N, H, W, 3)`` one step per chunk,
  ``meta/episode_ends``, in zarr format 2 or 3.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["encode_example", "jpeg", "png", "tfrecord_frame", "write_aloha", "write_lerobot_images", "write_rlds",
           "write_robomimic", "write_zarr"]


def jpeg(rgb: np.ndarray, quality: int = 90) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def png(rgb: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


# --------------------------------------------------------------------------- HDF5


def write_aloha(path: Path, cams: dict[str, np.ndarray], *, compress: bool = False) -> Path:
    """An ALOHA episode file holding ``cams`` (name -> (T, H, W, 3) uint8)."""
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    names = list(cams)
    t = len(next(iter(cams.values())))
    with h5py.File(path, "w", rdcc_nbytes=1024 ** 2 * 2) as root:
        root.attrs["sim"] = False
        root.attrs["compress"] = compress
        obs = root.create_group("observations")
        image = obs.create_group("images")
        obs.create_dataset("qpos", data=np.zeros((t, 14), np.float64))
        root.create_dataset("action", data=np.zeros((t, 14), np.float64))
        if not compress:
            for cam in names:
                frames = cams[cam]
                d = image.create_dataset(cam, frames.shape, dtype="uint8", chunks=(1, *frames.shape[1:]))
                d[...] = frames
            return path
        # cv2.imencode takes the array as BGR: the same bytes as a standard encoder given RGB reversed.
        encoded = {cam: [jpeg(f[:, :, ::-1], quality=50) for f in cams[cam]] for cam in names}
        lens = np.array([[len(b) for b in encoded[cam]] for cam in names])
        padded = int(lens.max())
        for cam in names:
            d = image.create_dataset(cam, (t, padded), dtype="uint8", chunks=(1, padded))
            rows = np.zeros((t, padded), np.uint8)
            for i, b in enumerate(encoded[cam]):
                rows[i, : len(b)] = np.frombuffer(b, np.uint8)
            d[...] = rows
        cl = root.create_dataset("compress_len", (len(names), t), dtype="float32")
        cl[...] = lens
    return path


def write_robomimic(path: Path, demos: Sequence[dict[str, np.ndarray]], *, control_freq: float | None = 20,
                    chw: bool = False) -> Path:
    """A robomimic dataset with one ``data/demo_i`` per entry of ``demos`` (cam -> frames)."""
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        if control_freq is not None:
            data.attrs["env_args"] = json.dumps({"env_name": "Lift", "type": 1,
                                                 "env_kwargs": {"control_freq": control_freq,
                                                                "camera_names": list(demos[0])}})
        total = 0
        for i, cams in enumerate(demos):
            demo = data.create_group(f"demo_{i}")
            t = len(next(iter(cams.values())))
            demo.attrs["num_samples"] = t
            total += t
            demo.create_dataset("actions", data=np.zeros((t, 7), np.float32))
            obs = demo.create_group("obs")
            obs.create_dataset("robot0_eef_pos", data=np.zeros((t, 3), np.float32))
            for cam, frames in cams.items():
                arr = np.moveaxis(frames, -1, 1) if chw else frames
                obs.create_dataset(cam, data=np.ascontiguousarray(arr), compression="gzip")
        data.attrs["total"] = total
    return path


# --------------------------------------------------------------------------- RLDS


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint((num << 3) | 2) + _varint(len(payload)) + payload


def encode_example(features: dict[str, list[bytes] | np.ndarray]) -> bytes:
    """A serialized ``tf.train.Example`` (bytes lists, int64 and float32 arrays)."""
    entries = b""
    for key, value in features.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "iub":
            ints = b"".join(_varint(int(v) & ((1 << 64) - 1)) for v in value.ravel())
            feature = _field(3, _field(1, ints))
        elif isinstance(value, np.ndarray):
            feature = _field(2, _field(1, value.astype("<f4").tobytes()))
        else:
            feature = _field(1, b"".join(_field(1, b) for b in value))
        entries += _field(1, _field(1, key.encode()) + _field(2, feature))
    return _field(1, entries)


def tfrecord_frame(data: bytes) -> bytes:
    import google_crc32c

    def masked(b: bytes) -> int:
        crc = google_crc32c.value(b)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", masked(head)) + data + struct.pack("<I", masked(data))


def _image_feature(h: int, w: int) -> dict[str, object]:
    return {"pythonClassName": "tensorflow_datasets.core.features.image_feature.Image",
            "image": {"shape": {"dimensions": [str(h), str(w), "3"]}, "dtype": "uint8", "encodingFormat": "jpeg"},
            "description": "camera RGB observation."}


def _tensor(shape: list[int], dtype: str) -> dict[str, object]:
    return {"pythonClassName": "tensorflow_datasets.core.features.tensor_feature.Tensor",
            "tensor": {"shape": {"dimensions": [str(s) for s in shape]}, "dtype": dtype, "encoding": "none"}}


def write_rlds(folder: Path, episodes: Sequence[dict[str, np.ndarray]], *, name: str = "robot_dataset",
               shards: int = 1) -> Path:
    """An RLDS dataset version folder: each episode (camera key -> frames) becomes one record
    with ``steps/observation/<cam>`` JPEG lists; records are spread over ``shards`` shards."""
    folder.mkdir(parents=True, exist_ok=True)
    cams = list(episodes[0])
    h, w = episodes[0][cams[0]].shape[1:3]
    obs = {cam: _image_feature(h, w) for cam in cams}
    obs["state"] = _tensor([7], "float32")
    fd = "tensorflow_datasets.core.features.features_dict.FeaturesDict"
    step = {"pythonClassName": fd, "featuresDict": {"features": {
        "observation": {"pythonClassName": fd, "featuresDict": {"features": obs}},
        "action": _tensor([7], "float32"),
        "is_first": {"pythonClassName": "tensorflow_datasets.core.features.scalar.Scalar",
                     "tensor": {"shape": {}, "dtype": "bool", "encoding": "none"}},
        "language_instruction": {"pythonClassName": "tensorflow_datasets.core.features.text_feature.Text",
                                 "text": {}},
    }}}
    schema = {"pythonClassName": fd, "featuresDict": {"features": {
        "steps": {"pythonClassName": "tensorflow_datasets.core.features.dataset_feature.Dataset",
                  "sequence": {"feature": step, "length": "-1"}},
        "episode_metadata": {"pythonClassName": fd, "featuresDict": {"features": {
            "file_path": {"pythonClassName": "tensorflow_datasets.core.features.text_feature.Text", "text": {}}}}},
    }}}
    (folder / "features.json").write_text(json.dumps(schema, indent=2))
    per = -(-len(episodes) // shards)
    lengths = []
    for s in range(shards):
        blob = b""
        chunk = episodes[s * per:(s + 1) * per]
        for e, ep in enumerate(chunk):
            t = len(ep[cams[0]])
            feats: dict[str, list[bytes] | np.ndarray] = {
                f"steps/observation/{cam}": [jpeg(f, quality=95) for f in ep[cam]] for cam in cams}
            feats["steps/observation/state"] = np.zeros(t * 7, np.float32)
            feats["steps/action"] = np.zeros(t * 7, np.float32)
            feats["steps/is_first"] = np.array([1] + [0] * (t - 1), np.int64)
            feats["steps/language_instruction"] = [b"pick up the cup"] * t
            feats["episode_metadata/file_path"] = [f"episode_{s * per + e}.npy".encode()]
            blob += tfrecord_frame(encode_example(feats))
        (folder / f"{name}-train.tfrecord-{s:05d}-of-{shards:05d}").write_bytes(blob)
        lengths.append(str(len(chunk)))
    (folder / "dataset_info.json").write_text(json.dumps({
        "name": name, "version": "1.0.0", "fileFormat": "tfrecord", "moduleName": f"{name}.{name}_dataset_builder",
        "splits": [{"name": "train", "numBytes": "0", "shardLengths": lengths,
                    "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"}]}, indent=2))
    return folder


# --------------------------------------------------------------------------- zarr


def write_zarr(folder: Path, episodes: Sequence[dict[str, np.ndarray]], *, zarr_format: int = 2,
               compressor: object = "default", chunk_steps: int = 1) -> Path:
    """A ReplayBuffer: the episodes' steps back to back in ``data/<cam>`` (``chunk_steps`` steps
    per chunk; one, as diffusion policy writes image arrays, by default), ``meta/episode_ends``."""
    import zarr

    cams = list(episodes[0])
    root = zarr.open_group(str(folder), mode="w", zarr_format=zarr_format)
    data = root.create_group("data")
    meta = root.create_group("meta")
    ends = np.cumsum([len(ep[cams[0]]) for ep in episodes]).astype(np.int64)
    n = int(ends[-1])
    for cam in cams:
        frames = np.concatenate([ep[cam] for ep in episodes])
        kw: dict[str, object] = {}
        if compressor != "default":
            kw["compressors"] = compressor
        a = data.create_array(cam, shape=frames.shape, chunks=(chunk_steps, *frames.shape[1:]), dtype="uint8",
                              **kw)
        a[...] = frames
    data.create_array("action", shape=(n, 2), dtype="float32")[...] = 0
    meta.create_array("episode_ends", shape=ends.shape, dtype="int64")[...] = ends
    return folder


# --------------------------------------------------------------------------- LeRobot


def write_lerobot_images(root: Path, episodes: Sequence[dict[str, np.ndarray]], *, fps: float,
                         row_group_size: int = 64) -> Path:
    """A LeRobot v3 dataset whose cameras are images in the data parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cams = list(episodes[0])
    h, w = episodes[0][cams[0]].shape[1:3]
    (root / "meta").mkdir(parents=True, exist_ok=True)
    features: dict[str, object] = {cam: {"dtype": "image", "shape": [int(h), int(w), 3],
                                         "names": ["height", "width", "channel"]} for cam in cams}
    for name, dtype in (("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"),
                        ("index", "int64"), ("task_index", "int64")):
        features[name] = {"dtype": dtype, "shape": [1], "names": None}
    info = {"codebase_version": "v3.0", "robot_type": "koch", "fps": fps, "total_episodes": len(episodes),
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", "features": features}
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=1))
    columns: dict[str, list[object]] = {cam: [] for cam in cams}
    for k in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        columns[k] = []
    index = 0
    for e, ep in enumerate(episodes):
        for i in range(len(ep[cams[0]])):
            for cam in cams:
                columns[cam].append({"bytes": png(ep[cam][i]), "path": f"frame_{index:06d}.png"})
            columns["timestamp"].append(i / fps)
            columns["frame_index"].append(i)
            columns["episode_index"].append(e)
            columns["index"].append(index)
            columns["task_index"].append(0)
            index += 1
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([(cam, image) for cam in cams] + [
        ("timestamp", pa.float32()), ("frame_index", pa.int64()), ("episode_index", pa.int64()),
        ("index", pa.int64()), ("task_index", pa.int64())])
    out = root / "data" / "chunk-000" / "file-000.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(columns, schema=schema), out, row_group_size=row_group_size)
    return root
