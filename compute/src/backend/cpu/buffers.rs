//! The CPU backend's buffers ([`CpuBuf`], [`CpuData`], their [`Storage`]) and the float views
//! every primitive reads and writes them through (FP32 scratch, rounded to the buffer's dtype).

use half::{bf16, f16, slice::HalfFloatSliceExt};

use super::memory::Ticket;
use crate::backend::{LossSums, ScalerState, CURSOR_WORDS};
use crate::error::ComputeError;
use crate::error::Result;
use crate::fp8::Fp8State;

/// Storage of a CPU buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Storage {
    /// f32 values.
    F32(Vec<f32>),
    /// IEEE half values.
    F16(Vec<f16>),
    /// bfloat16 values.
    Bf16(Vec<bf16>),
    /// Bytes.
    U8(Vec<u8>),
    /// 32-bit indices.
    U32(Vec<u32>),
    /// Loss scaler state.
    Scaler(ScalerState),
    /// Loss/accuracy sums.
    Sums(LossSums),
    /// FP8 scaling state.
    Fp8(Box<Fp8State>),
}

/// A CPU buffer with its memory accounting.
#[derive(Debug)]
pub struct CpuBuf {
    /// The values.
    pub storage: Storage,
    pub(super) _ticket: Ticket,
}

/// A data split held in host memory.
#[derive(Debug)]
pub struct CpuData {
    pub(super) images: Vec<u8>,
    pub(super) labels: Vec<u8>,
    pub(super) pixels: usize,
    pub(super) _ticket: Ticket,
}

pub(super) fn bad(what: &str) -> ComputeError {
    ComputeError::Backend {
        backend: "cpu".into(),
        reason: what.into(),
    }
}

/// Read-only float view of a buffer.
#[derive(Clone, Copy)]
pub(super) enum FloatRef<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    Bf16(&'a [bf16]),
}

impl<'a> FloatRef<'a> {
    pub(super) fn of(b: &'a CpuBuf, need: usize, what: &str) -> Result<Self> {
        let (r, len) = match &b.storage {
            Storage::F32(v) => (FloatRef::F32(v), v.len()),
            Storage::F16(v) => (FloatRef::F16(v), v.len()),
            Storage::Bf16(v) => (FloatRef::Bf16(v), v.len()),
            _ => return Err(bad(&format!("{what}: expected a float buffer"))),
        };
        if len < need {
            return Err(bad(&format!(
                "{what}: buffer holds {len} elements, {need} needed"
            )));
        }
        Ok(r)
    }
    /// Copies/converts `[start, start + dst.len())` into `dst`.
    pub(super) fn load(&self, start: usize, dst: &mut [f32]) {
        let end = start + dst.len();
        match self {
            FloatRef::F32(v) => dst.copy_from_slice(&v[start..end]),
            FloatRef::F16(v) => v[start..end].convert_to_f32_slice(dst),
            FloatRef::Bf16(v) => v[start..end].convert_to_f32_slice(dst),
        }
    }
    pub(super) fn to_vec(self, start: usize, len: usize) -> Vec<f32> {
        let mut v = vec![0.0; len];
        self.load(start, &mut v);
        v
    }
    pub(super) fn all_finite(&self) -> bool {
        match self {
            FloatRef::F32(v) => v.iter().all(|x| x.is_finite()),
            FloatRef::F16(v) => v.iter().all(|x| x.is_finite()),
            FloatRef::Bf16(v) => v.iter().all(|x| x.is_finite()),
        }
    }
}

/// Mutable float view of a buffer.
pub(super) enum FloatMut<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [f16]),
    Bf16(&'a mut [bf16]),
}

impl<'a> FloatMut<'a> {
    pub(super) fn of(b: &'a mut CpuBuf, need: usize, what: &str) -> Result<Self> {
        let (r, len): (FloatMut<'a>, usize) = match &mut b.storage {
            Storage::F32(v) => {
                let l = v.len();
                (FloatMut::F32(&mut v[..]), l)
            }
            Storage::F16(v) => {
                let l = v.len();
                (FloatMut::F16(&mut v[..]), l)
            }
            Storage::Bf16(v) => {
                let l = v.len();
                (FloatMut::Bf16(&mut v[..]), l)
            }
            _ => return Err(bad(&format!("{what}: expected a float buffer"))),
        };
        if len < need {
            return Err(bad(&format!(
                "{what}: buffer holds {len} elements, {need} needed"
            )));
        }
        Ok(r)
    }
    /// Stores `src` at `start`, rounding to the buffer's dtype.
    pub(super) fn store(&mut self, start: usize, src: &[f32]) {
        let end = start + src.len();
        match self {
            FloatMut::F32(v) => v[start..end].copy_from_slice(src),
            FloatMut::F16(v) => v[start..end].convert_from_f32_slice(src),
            FloatMut::Bf16(v) => v[start..end].convert_from_f32_slice(src),
        }
    }
    /// Splits the first `n · len` elements into `n` chunks of `len`.
    pub(super) fn split(self, len: usize, ranges: &[std::ops::Range<usize>]) -> Vec<FloatMut<'a>> {
        fn go<'b, T>(
            mut v: &'b mut [T],
            len: usize,
            ranges: &[std::ops::Range<usize>],
            wrap: fn(&'b mut [T]) -> FloatMut<'b>,
        ) -> Vec<FloatMut<'b>> {
            let mut out = Vec::new();
            let mut at = 0;
            for r in ranges {
                let skip = r.start * len - at;
                let (_, rest) = std::mem::take(&mut v).split_at_mut(skip);
                let (mine, rest) = rest.split_at_mut(r.len() * len);
                out.push(wrap(mine));
                v = rest;
                at = r.end * len;
            }
            out
        }
        match self {
            FloatMut::F32(v) => go(v, len, ranges, FloatMut::F32),
            FloatMut::F16(v) => go(v, len, ranges, FloatMut::F16),
            FloatMut::Bf16(v) => go(v, len, ranges, FloatMut::Bf16),
        }
    }
}

pub(super) fn cursor_words(b: &CpuBuf) -> Result<[u32; CURSOR_WORDS]> {
    match &b.storage {
        Storage::U32(v) if v.len() >= CURSOR_WORDS => Ok([v[0], v[1], v[2]]),
        _ => Err(bad("a step cursor is a U32 buffer of 3 words")),
    }
}

pub(super) fn u8_of<'a>(b: &'a CpuBuf, need: usize, what: &str) -> Result<&'a [u8]> {
    match &b.storage {
        Storage::U8(v) if v.len() >= need => Ok(v),
        _ => Err(bad(&format!(
            "{what}: expected a byte buffer of at least {need}"
        ))),
    }
}

pub(super) fn u8_mut<'a>(b: &'a mut CpuBuf, need: usize, what: &str) -> Result<&'a mut [u8]> {
    match &mut b.storage {
        Storage::U8(v) if v.len() >= need => Ok(v),
        _ => Err(bad(&format!(
            "{what}: expected a byte buffer of at least {need}"
        ))),
    }
}

pub(super) fn scaler_of(b: &CpuBuf) -> Result<ScalerState> {
    match &b.storage {
        Storage::Scaler(s) => Ok(*s),
        _ => Err(bad("expected a scaler state buffer")),
    }
}
