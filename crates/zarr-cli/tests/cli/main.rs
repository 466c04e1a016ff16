//! Runs the `zarr` binary: on stores from the fixture corpus (written by zarr-python and
//! tensorstore) and on stores it writes itself.

mod broken;
mod common;
mod copy;
mod fixed_point;
mod inspect;
mod interop;
mod misc;
mod n5;
mod ndarray;
mod npy_files;
mod pyramid;
mod stats;
mod verify;
mod write;
