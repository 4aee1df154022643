"""A minimal NIfTI-1 / NIfTI-2 writer with numpy (nibabel is not packaged in Debian 12's python3).

Used by tools/make_demo_volume.py and tools/make_volume_fixtures.py. Written from the NIfTI-1 and
NIfTI-2 header definitions (nifti1.h, nifti2.h), field by field at their byte offsets, so that
voxrt's reader, which goes through niftilib, is checked against an independent writer.

    write_nifti("scan.nii.gz", array_kji, spacing=(0.8, 0.8, 2.0))

`array` is C-ordered (nz, ny, nx) or (nt, nz, ny, nx): the file's own memory order, i fastest.
"""

import gzip
import struct

import numpy as np

DATATYPES = {
    np.dtype(np.uint8): 2,
    np.dtype(np.int16): 4,
    np.dtype(np.int32): 8,
    np.dtype(np.float32): 16,
    np.dtype(np.float64): 64,
    np.dtype(np.int8): 256,
    np.dtype(np.uint16): 512,
    np.dtype(np.uint32): 768,
    np.dtype(np.int64): 1024,
    np.dtype(np.uint64): 1280,
}


def _quaternion_of(rotation):
    """Quaternion (b, c, d) and qfac of a proper or improper rotation, as nifti1.h describes."""
    r = np.array(rotation, dtype=np.float64)
    qfac = 1.0
    if np.linalg.det(r) < 0:
        qfac = -1.0
        r[:, 2] = -r[:, 2]
    a = 1.0 + r[0, 0] + r[1, 1] + r[2, 2]
    if a > 0.5:
        a = 0.5 * np.sqrt(a)
        b = 0.25 * (r[2, 1] - r[1, 2]) / a
        c = 0.25 * (r[0, 2] - r[2, 0]) / a
        d = 0.25 * (r[1, 0] - r[0, 1]) / a
    else:
        raise ValueError("use a rotation closer to the identity in these fixtures")
    return (b, c, d), qfac


def header_fields(shape, dtype, spacing, rotation, offset, scl_slope, scl_inter, sform_code, qform_code):
    dims = list(shape[::-1])  # nx, ny, nz[, nt]
    ndim = len(dims)
    dim = [ndim] + dims + [1] * (7 - ndim)
    (b, c, d), qfac = _quaternion_of(rotation)
    pixdim = [qfac] + list(spacing) + [1.0] * (7 - len(spacing))
    affine = np.array(rotation, dtype=np.float64) @ np.diag(spacing[:3])
    srow = [list(affine[i]) + [offset[i]] for i in range(3)]
    return dict(dim=dim, datatype=DATATYPES[np.dtype(dtype)], bitpix=8 * np.dtype(dtype).itemsize,
                pixdim=pixdim, scl_slope=scl_slope, scl_inter=scl_inter, quatern=(b, c, d), qoffset=offset,
                srow=srow, sform_code=sform_code, qform_code=qform_code, xyzt_units=2 | 8)


def nifti1_header(f, byteorder="<"):
    e = byteorder
    h = bytearray(348)
    struct.pack_into(e + "i", h, 0, 348)
    h[38] = ord("r")
    struct.pack_into(e + "8h", h, 40, *f["dim"])
    struct.pack_into(e + "hhh", h, 70, f["datatype"], f["bitpix"], 0)
    struct.pack_into(e + "8f", h, 76, *f["pixdim"])
    struct.pack_into(e + "fff", h, 108, 352.0, f["scl_slope"], f["scl_inter"])
    h[123] = f["xyzt_units"]
    h[148:148 + 13] = b"voxrt fixture"
    struct.pack_into(e + "hh", h, 252, f["qform_code"], f["sform_code"])
    struct.pack_into(e + "6f", h, 256, *f["quatern"], *f["qoffset"])
    for i in range(3):
        struct.pack_into(e + "4f", h, 280 + 16 * i, *f["srow"][i])
    h[344:348] = b"n+1\0"
    return bytes(h) + b"\0\0\0\0"


def nifti2_header(f, byteorder="<"):
    e = byteorder
    h = bytearray(540)
    struct.pack_into(e + "i", h, 0, 540)
    h[4:12] = b"n+2\0\r\n\x1a\n"
    struct.pack_into(e + "hh", h, 12, f["datatype"], f["bitpix"])
    struct.pack_into(e + "8q", h, 16, *f["dim"])
    struct.pack_into(e + "8d", h, 104, *f["pixdim"])
    struct.pack_into(e + "q", h, 168, 544)
    struct.pack_into(e + "dd", h, 176, f["scl_slope"], f["scl_inter"])
    h[240:240 + 13] = b"voxrt fixture"
    struct.pack_into(e + "ii", h, 344, f["qform_code"], f["sform_code"])
    struct.pack_into(e + "6d", h, 352, *f["quatern"], *f["qoffset"])
    for i in range(3):
        struct.pack_into(e + "4d", h, 400 + 32 * i, *f["srow"][i])
    struct.pack_into(e + "i", h, 500, f["xyzt_units"])
    return bytes(h) + b"\0\0\0\0"


def write_nifti(path, array, spacing=(1.0, 1.0, 1.0), rotation=np.eye(3), offset=(0.0, 0.0, 0.0),
                scl_slope=0.0, scl_inter=0.0, version=1, byteorder="<", sform_code=1, qform_code=1):
    """Writes `array` (C order: (nz, ny, nx) or (nt, nz, ny, nx)) as stored, with the given scaling."""
    array = np.ascontiguousarray(array)
    f = header_fields(array.shape, array.dtype, tuple(float(s) for s in spacing), rotation,
                      tuple(float(o) for o in offset), scl_slope, scl_inter, sform_code, qform_code)
    head = nifti1_header(f, byteorder) if version == 1 else nifti2_header(f, byteorder)
    data = array.astype(array.dtype.newbyteorder(byteorder)).tobytes()
    if str(path).endswith(".gz"):
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
            fh.write(head + data)
    else:
        with open(path, "wb") as fh:
            fh.write(head + data)
