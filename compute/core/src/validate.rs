//! The field rules a request's types carry at deserialisation (`#[serde(deserialize_with =
//! "...")]`) and the same rules for requests built in code: a positive finite `f32` or `f64`,
//! a finite `f32`, a list whose items are each given once. A leaf: the wire types and the
//! strict parser (`protocol::strict`) use it; it imports nothing of theirs.

use std::collections::HashSet;
use std::hash::Hash;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ComputeError;

/// A number as a person writes it: `0.5`, `1e300`, `1e-60`.
pub(crate) fn num(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-6..1e16).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// The message for a number an `f32` cannot hold.
pub(crate) fn beyond_f32(x: f64) -> String {
    format!("{} is beyond the range of a 32-bit float (±3.4e38)", num(x))
}

/// Whether `x` is finite within `f32`'s range.
pub(crate) fn fits_f32(x: f64) -> bool {
    x.is_finite() && x.abs() <= f64::from(f32::MAX)
}

/// A positive finite `f32` (a learning rate): refuses zero, a negative number, and a number
/// beyond `f32`'s range (`1e300` is not infinity), saying "must be a positive finite number",
/// the CLI's words.
pub fn positive_f32<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    let x = f64::deserialize(d)?;
    let rule = "must be a positive finite number";
    if !fits_f32(x) {
        return Err(de::Error::custom(format!("{rule}: {}", beyond_f32(x))));
    }
    let v = x as f32;
    if v > 0.0 {
        Ok(v)
    } else {
        Err(de::Error::custom(format!("{rule}, not {}", num(x))))
    }
}

/// A finite `f32` (a probability whose range the job checks): refuses a number beyond `f32`'s
/// range instead of reading it as infinity.
pub fn finite_f32<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    let x = f64::deserialize(d)?;
    if fits_f32(x) {
        Ok(x as f32)
    } else {
        Err(de::Error::custom(format!(
            "must be a finite number: {}",
            beyond_f32(x)
        )))
    }
}

/// A positive finite `f64` (a time budget).
pub fn positive_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let x = f64::deserialize(d)?;
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(de::Error::custom(format!(
            "must be a positive finite number, not {}",
            num(x)
        )))
    }
}

/// A list's item as the user wrote it: a string without its quotes, anything else as JSON.
fn shown<T: Serialize>(item: &T) -> String {
    match serde_json::to_value(item) {
        Ok(Value::String(s)) => s,
        Ok(v) => v.to_string(),
        Err(_) => "an item".into(),
    }
}

/// The first item of `list` that an earlier one repeats, as the user wrote it (`fp32`).
pub fn first_duplicate<T: Eq + Hash + Serialize>(list: &[T]) -> Option<String> {
    let mut seen = HashSet::with_capacity(list.len());
    list.iter().find(|item| !seen.insert(*item)).map(shown)
}

/// The rule of every list of choices in a request (precisions, activations, batch sizes...):
/// each item once. `Err` names `field` and the repeated item; a job's `validate` calls this
/// for requests built in code (the doors' requests were refused when parsed, by [`unique`]).
pub fn check_unique<T: Eq + Hash + Serialize>(field: &str, list: &[T]) -> Result<(), ComputeError> {
    match first_duplicate(list) {
        Some(item) => Err(ComputeError::bad_arg(field, item, DUPLICATE)),
        None => Ok(()),
    }
}

/// Why a repeated item is refused.
const DUPLICATE: &str = "is listed twice; name each once";

/// A list whose items are each given once: `["fp32","fp16","fp32"]` is refused naming
/// `fp32` ([`check_unique`]'s rule, at deserialisation).
pub fn unique<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Eq + Hash + Serialize,
{
    let list = Vec::<T>::deserialize(d)?;
    match first_duplicate(&list) {
        Some(item) => Err(de::Error::custom(format!("'{item}' {DUPLICATE}"))),
        None => Ok(list),
    }
}
