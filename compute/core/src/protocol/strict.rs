//! Strict reading of requests: the one parser every door calls ([`parse_request`],
//! [`parse_envelope`], [`parse_request_value`]) and the field rules the request types carry
//! at deserialisation ([`positive_f32`], [`finite_f32`], [`positive_f64`], [`unique`],
//! [`object`]).
//!
//! What serde's derive lets through and a request must not:
//!
//! - **A struct given as an array.** The derive reads `[]` as a struct of defaults, so
//!   `{"op":"duel","config":[]}` would run a duel with every default. The parser reads a
//!   request through `Strict`, a deserializer over the parsed JSON that hands a struct or a
//!   map only a JSON object, at every depth; an internally tagged enum field (which serde reads
//!   through `deserialize_any`) carries [`object`] for the same rule.
//! - **A number beyond `f32`.** JSON `1e300` read as an `f32` became infinity (and `null` when
//!   the HTTP door passed it on). Every `f32` the parser reads must be finite within `f32`'s
//!   range, and the request types' float fields carry their own rule ([`positive_f32`]...), so
//!   a caller that skips the parser is held to it too.
//! - **The same item twice** in a list (`"precisions": ["fp32","fp16","fp32"]` trained FP32
//!   twice): lists of choices carry [`unique`]; the jobs' own `validate` calls
//!   [`check_unique`] for requests built in code (the CLI).
//!
//! Every error names where it is, as a path from the request (`config.lr`,
//! `request.config.precisions` in an envelope) through `serde_path_to_error`, with no
//! position of an internal line and no Rust debug text.

use std::fmt::Display;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess,
    Visitor,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ApiError, Envelope, Request};
use crate::validate::{beyond_f32, fits_f32};
pub use crate::validate::{
    check_unique, finite_f32, first_duplicate, positive_f32, positive_f64, unique,
};

/// What a JSON value is, in words (`an array`), for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The parsed JSON of a request as a deserializer that is strict where `serde_json::Value`
/// is lenient: a struct or a map is read only from a JSON object (never from an array), and
/// an `f32` only from a number within `f32`'s finite range. Everything nested is read through
/// it too.
pub(crate) struct Strict(pub(crate) Value);

fn not_an_object(v: &Value) -> serde_json::Error {
    de::Error::custom(format!("must be a JSON object {{...}}, not {}", kind(v)))
}

macro_rules! forward_to_value {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.0.$method(visitor)
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Strict {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => visit_array(items, visitor),
            Value::Object(map) => visit_object(map, visitor),
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(map) => visit_object(map, visitor),
            other => Err(not_an_object(&other)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => visit_array(items, visitor),
            other => other.deserialize_seq(visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(Strict(other)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        // The requests' externally tagged enums are unit variants named by a string.
        self.0.deserialize_enum(name, variants, visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match &self.0 {
            Value::Number(n) => match n.as_f64() {
                Some(x) if fits_f32(x) => visitor.visit_f32(x as f32),
                Some(x) => Err(de::Error::custom(beyond_f32(x))),
                None => self.0.deserialize_f32(visitor),
            },
            _ => self.0.deserialize_f32(visitor),
        }
    }

    forward_to_value! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f64 deserialize_char deserialize_str deserialize_string
        deserialize_bytes deserialize_byte_buf deserialize_unit deserialize_identifier
        deserialize_ignored_any
    }
}

fn visit_array<'de, V: Visitor<'de>>(
    items: Vec<Value>,
    visitor: V,
) -> Result<V::Value, serde_json::Error> {
    let len = items.len();
    let mut seq = StrictSeq(items.into_iter());
    let out = visitor.visit_seq(&mut seq)?;
    if seq.0.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(
            len,
            &"fewer elements in the array",
        ))
    }
}

fn visit_object<'de, V: Visitor<'de>>(
    map: Map<String, Value>,
    visitor: V,
) -> Result<V::Value, serde_json::Error> {
    let len = map.len();
    let mut access = StrictMap {
        entries: map.into_iter(),
        value: None,
    };
    let out = visitor.visit_map(&mut access)?;
    if access.entries.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(
            len,
            &"fewer entries in the object",
        ))
    }
}

struct StrictSeq(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for StrictSeq {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(Strict(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct StrictMap {
    entries: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl<'de> MapAccess<'de> for StrictMap {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                let key: de::value::StringDeserializer<serde_json::Error> = key.into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(Strict(v)),
            None => Err(de::Error::custom("a value was asked for before its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// `path: what`, or `what` alone at the top (path `.`).
fn at(prefix: &str, path: &serde_path_to_error::Path, what: impl Display) -> String {
    let path = path.to_string();
    match (prefix.is_empty(), path == ".") {
        (true, true) => what.to_string(),
        (true, false) => format!("{path}: {what}"),
        (false, true) => format!("{prefix}: {what}"),
        (false, false) => format!("{prefix}.{path}: {what}"),
    }
}

/// `value` read as a `T` through [`Strict`]; an error names its path under `prefix`.
fn typed<T: DeserializeOwned>(prefix: &str, value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(Strict(value)).map_err(|e| at(prefix, e.path(), e.inner()))
}

/// Any JSON value, read as `serde_json::Value` is, except that an object naming a key twice
/// is refused (`Value` would keep the last one silently: `{"config":{..},"config":{..}}`).
struct Json(Value);

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json(v.into()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json(Value::String(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(Json(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Json(value) = map.next_value()?;
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "the key `{}` is given twice in one object",
                    key.chars().take(64).collect::<String>()
                )));
            }
            out.insert(key, value);
        }
        Ok(Json(Value::Object(out)))
    }
}

/// `bytes` parsed as JSON; a syntax error (or a number beyond a 64-bit float, or a key given
/// twice in an object) names where it is, as a path and as a line and column of the text.
fn json(bytes: &[u8]) -> Result<Value, String> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let Json(value) = serde_path_to_error::deserialize(&mut reader)
        .map_err(|e| at("", e.path(), format_args!("not JSON: {}", e.inner())))?;
    reader.end().map_err(|e| format!("not JSON: {e}"))?;
    Ok(value)
}

/// The request in object `map` (its `op` and its payload's fields); errors name their path
/// under `prefix` (`request` in an envelope, nothing for a bare request).
fn request_from_map(prefix: &str, mut map: Map<String, Value>) -> Result<Request, String> {
    let field = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        }
    };
    let op = match map.remove("op") {
        Some(Value::String(op)) => op,
        Some(other) => {
            return Err(format!(
                "{}: must be a string naming the operation, not {}",
                field("op"),
                kind(&other)
            ))
        }
        None => {
            return Err(format!(
                "missing field `{}`: the operation, as in {{\"op\":\"doctor\"}}",
                field("op")
            ))
        }
    };
    match Request::from_payload(prefix, &op, Value::Object(map)) {
        Some(parsed) => parsed,
        None => Err(format!(
            "{}: unknown operation `{}`; expected one of {}",
            field("op"),
            op.chars().take(64).collect::<String>(),
            Request::NAMES.join(", ")
        )),
    }
}

/// A request's JSON value, checked and typed: an object whose `op` names the operation, every
/// field of its payload known and of the right type, every struct an object, every number
/// within its type's range and rule, no list naming an item twice.
fn request_from_value(prefix: &str, value: Value) -> Result<Request, String> {
    match value {
        Value::Object(map) => request_from_map(prefix, map),
        other => Err(if prefix.is_empty() {
            format!(
                "a request must be a JSON object {{\"op\":...}}, not {}",
                kind(&other)
            )
        } else {
            format!(
                "{prefix}: must be a JSON object {{\"op\":...}}, not {}",
                kind(&other)
            )
        }),
    }
}

impl Request {
    /// The payload `value` (the request's object without its `op`) of operation `op`, or
    /// `None` when no operation has that name.
    pub(crate) fn from_payload(
        prefix: &str,
        op: &str,
        value: Value,
    ) -> Option<Result<Request, String>> {
        Request::payload_parser(op).map(|parse| parse(prefix, value))
    }

    /// Parses a payload of operation `T` (used by the `ops!` table).
    pub(crate) fn parse_payload<T: DeserializeOwned + Into<Request>>(
        prefix: &str,
        value: Value,
    ) -> Result<Request, String> {
        typed::<T>(prefix, value).map(Into::into)
    }
}

/// Parses a bare request, as the HTTP door receives it (`{"op":"duel","config":{...}}`).
/// The error is [`ErrorKind::BadInput`](crate::error::ErrorKind::BadInput), its message naming
/// the field that is wrong by its path (`config.lr: must be a positive finite number ...`).
pub fn parse_request(bytes: &[u8]) -> Result<Request, ApiError> {
    json(bytes)
        .and_then(|v| request_from_value("", v))
        .map_err(ApiError::bad_input)
}

/// [`parse_request`] for a request already parsed as JSON (the desktop shell's commands).
pub fn parse_request_value(value: Value) -> Result<Request, ApiError> {
    request_from_value("", value).map_err(ApiError::bad_input)
}

/// Parses one stdio line's [`Envelope`] (`{"id":7,"request":{"op":...}}`). On error, the id
/// when the line has a readable one (the reply's id; the door answers 0 otherwise) and the
/// [`ErrorKind::BadInput`](crate::error::ErrorKind::BadInput) error, whose message names the
/// wrong field by its path in the line (`request.config.lr: ...`).
pub fn parse_envelope(bytes: &[u8]) -> Result<Envelope, (Option<u64>, ApiError)> {
    let bad = |id: Option<u64>, message: String| (id, ApiError::bad_input(message));
    let value = json(bytes).map_err(|m| bad(None, m))?;
    let mut map = match value {
        Value::Object(map) => map,
        other => {
            return Err(bad(
                None,
                format!(
                    "a line must be a JSON object {{\"id\":N,\"request\":{{\"op\":...}}}}, not {}",
                    kind(&other)
                ),
            ))
        }
    };
    let id = match map.remove("id") {
        Some(v) => match v.as_u64() {
            Some(id) => id,
            None => {
                return Err(bad(
                    None,
                    format!(
                        "id: must be a whole number from 0 to {}, not {}",
                        u64::MAX,
                        match &v {
                            Value::Number(n) => n.to_string(),
                            other => kind(other).to_string(),
                        }
                    ),
                ))
            }
        },
        None => {
            return Err(bad(
                None,
                "missing field `id`: a line is {\"id\":N,\"request\":{\"op\":...}}".into(),
            ))
        }
    };
    let request = map.remove("request");
    if let Some(extra) = map.keys().next() {
        return Err(bad(
            Some(id),
            format!(
                "unknown field `{}`: a line has only `id` and `request`",
                extra.chars().take(64).collect::<String>()
            ),
        ));
    }
    let Some(request) = request else {
        return Err(bad(
            Some(id),
            "missing field `request`: a line is {\"id\":N,\"request\":{\"op\":...}}".into(),
        ));
    };
    let request = request_from_value("request", request).map_err(|m| bad(Some(id), m))?;
    Ok(Envelope { id, request })
}

/// A field that must be a JSON object, for an internally tagged enum (`ProfileTarget`,
/// `DigitSource`): serde reads those through `deserialize_any` and would take an array for
/// one, its first item as the tag.
pub fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(d)?;
    if !value.is_object() {
        return Err(de::Error::custom(format!(
            "must be a JSON object {{...}}, not {}",
            kind(&value)
        )));
    }
    T::deserialize(Strict(value)).map_err(de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{DuelConfig, Precision};
    use serde_json::json;

    fn refused(body: &str) -> String {
        match parse_request(body.as_bytes()) {
            Ok(r) => panic!("{body} was accepted as {r:?}"),
            Err(e) => {
                assert_eq!(e.code, crate::error::ErrorKind::BadInput, "{e}");
                e.message
            }
        }
    }

    /// A message for the user: no internal line number, no Rust debug text.
    fn assert_clean(m: &str) {
        for bad in ["Some(", "None", "line 0", "Error(", "\\\""] {
            assert!(!m.contains(bad), "{bad:?} in {m}");
        }
        assert!(!m.starts_with("line "), "{m}");
    }

    /// One valid request of every operation, naming every list and nested struct a request
    /// may carry (a new operation fails here until it has one).
    fn example(op: &str) -> Value {
        let payload = match op {
            "doctor" | "list_datasets" | "model_summary" | "cancel" | "ncu_imports"
            | "ncu_example" | "runs" | "verdict" | "verdict_html" | "lab_runs" | "peer_status"
            | "peer_pythons" | "gpu_state" | "job_status" => json!({}),
            "dataset_samples" => json!({"dataset": "mnist-sample", "split": "test", "count": 4}),
            "duel" => json!({"config": {"backend": "cpu", "precisions": ["fp32", "fp16"],
                "lr": 0.001, "dropout": 0.25, "train_limit": 64}}),
            "occupancy" => json!({"cc": "9.0", "input": {"threads_per_block": 256,
                "registers_per_thread": 64, "shared_mem_per_block": 0}}),
            "kernel_facts" => json!({"name": "train"}),
            "ncu_import" => json!({"file_name": "a.csv", "text": ""}),
            "ncu_panels" => json!({"import": "i", "kernel": 1}),
            "ncu_attach" => json!({"import": "i", "panel": "launch", "file_name": "a.png",
                "image_base64": ""}),
            "ncu_detach" | "ncu_screenshot" => json!({"import": "i", "screenshot": "s"}),
            "ncu_remove" => json!({"import": "i"}),
            "run" | "run_remove" | "run_csv" | "lab_run" | "lab_run_remove" | "lab_run_csv" => {
                json!({"id": "a"})
            }
            "data_fetch" => json!({"dataset": "mnist"}),
            "kernel_bench" => json!({"ops": ["relu", "swish"], "dtypes": ["f32", "f16"]}),
            "conv_ladder" => json!({"layers": ["lab_conv1", "lab_conv2"]}),
            "infer_bench" => json!({"activations": ["relu", "gelu"], "batches": [1, 32],
                "compile_batches": [32], "budget_ms": 50.0}),
            "step_anatomy" => json!({"precisions": ["fp32", "fp16"]}),
            "crossover" => json!({"sizes": [64, 128], "precisions": ["fp32", "bf16"],
                "backend": "cpu"}),
            "profile" => json!({"what": {"target": "step", "precision": "fp16", "batch": 8},
                "sections": ["Occupancy", "LaunchStats"]}),
            "ncu_rep_import" => json!({"file_name": "a.ncu-rep", "base64": ""}),
            "peer_set_python" => json!({"python": null}),
            "explain" => json!({"precisions": ["fp32", "fp16"],
                "digit": {"from": "dataset", "dataset": "mnist-sample", "index": 0}}),
            other => panic!("no example for operation `{other}`: add one"),
        };
        let mut v = payload;
        v["op"] = json!(op);
        v
    }

    /// Every path (`config.precisions`) under `v` to a value that `pick` takes.
    fn paths(v: &Value, at: &str, pick: &dyn Fn(&Value) -> bool, out: &mut Vec<String>) {
        if !at.is_empty() && pick(v) {
            out.push(at.to_string());
        }
        if let Value::Object(m) = v {
            for (k, child) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                paths(child, &p, pick, out);
            }
        }
    }

    fn pointer(path: &str) -> String {
        format!("/{}", path.replace('.', "/"))
    }

    #[test]
    fn every_example_parses_as_serde_reads_it() {
        for op in Request::NAMES {
            let v = example(op);
            let strict =
                parse_request(v.to_string().as_bytes()).unwrap_or_else(|e| panic!("{op}: {e}"));
            let plain: Request = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(strict, plain, "{op}");
            assert_eq!(strict.name(), *op);
            let env = parse_envelope(json!({"id": 9, "request": v}).to_string().as_bytes())
                .unwrap_or_else(|(_, e)| panic!("{op}: {e}"));
            assert_eq!((env.id, env.request), (9, strict));
        }
    }

    /// Regression (issue 30): `{"op":"duel","config":[]}` ran and saved a duel with every
    /// default. Every struct of every request must be a JSON object.
    #[test]
    fn duel_config_array_is_refused_and_so_is_every_struct_given_as_an_array() {
        let m = refused(r#"{"op":"duel","config":[]}"#);
        assert_eq!(m, "config: must be a JSON object {...}, not an array");
        let mut checked = 0;
        for op in Request::NAMES {
            let v = example(op);
            let mut objects = Vec::new();
            paths(&v, "", &Value::is_object, &mut objects);
            for path in objects {
                for bad in [json!([]), json!([op, {}]), json!("x")] {
                    let mut w = v.clone();
                    *w.pointer_mut(&pointer(&path)).unwrap() = bad.clone();
                    let m = refused(&w.to_string());
                    assert!(
                        m.starts_with(&format!("{path}: ")) && m.contains("JSON object"),
                        "{op} {path}={bad}: {m}"
                    );
                    assert_clean(&m);
                    let (id, e) =
                        parse_envelope(json!({"id": 4, "request": w}).to_string().as_bytes())
                            .unwrap_err();
                    assert_eq!(id, Some(4));
                    assert!(e.message.starts_with(&format!("request.{path}: ")), "{e}");
                }
                checked += 1;
            }
        }
        // duel's config, occupancy's input, profile's what, explain's digit.
        assert!(checked >= 4, "{checked}");
        // The request itself and the envelope too.
        assert_eq!(
            refused(r#"["duel",{}]"#),
            "a request must be a JSON object {\"op\":...}, not an array"
        );
        for line in [r#"[1,{"op":"doctor"}]"#, r#"{"id":1,"request":["doctor"]}"#] {
            let (_, e) = parse_envelope(line.as_bytes()).unwrap_err();
            assert!(e.message.contains("JSON object"), "{line}: {e}");
        }
    }

    /// Regression (issue 30): `"precisions": ["fp32","fp16","fp32"]` trained FP32 twice;
    /// every list of every request now refuses a repeated item, naming it and its field.
    #[test]
    fn duplicate_precisions_are_refused_in_every_job_naming_field_and_value() {
        let m = refused(r#"{"op":"duel","config":{"precisions":["fp32","fp16","fp32"]}}"#);
        assert_eq!(
            m,
            "config.precisions: 'fp32' is listed twice; name each once"
        );
        let mut checked = Vec::new();
        for op in Request::NAMES {
            let v = example(op);
            let mut lists = Vec::new();
            paths(
                &v,
                "",
                &|x| x.as_array().is_some_and(|a| !a.is_empty()),
                &mut lists,
            );
            for path in lists {
                let mut w = v.clone();
                let list = w.pointer_mut(&pointer(&path)).unwrap();
                let first = list[0].clone();
                list.as_array_mut().unwrap().push(first.clone());
                let m = refused(&w.to_string());
                let item = first.as_str().map_or(first.to_string(), str::to_string);
                assert_eq!(
                    m,
                    format!("{path}: '{item}' is listed twice; name each once"),
                    "{op}"
                );
                checked.push(format!("{op}.{path}"));
            }
        }
        for want in [
            "duel.config.precisions",
            "step_anatomy.precisions",
            "explain.precisions",
            "infer_bench.activations",
            "infer_bench.batches",
            "kernel_bench.ops",
            "conv_ladder.layers",
            "crossover.sizes",
            "crossover.precisions",
        ] {
            assert!(checked.iter().any(|c| c == want), "{want}: {checked:?}");
        }
        // A request built in code (the CLI) meets the same rule in the duel's validate.
        let cfg = DuelConfig {
            precisions: vec![Precision::Fp32, Precision::Fp16, Precision::Fp32],
            ..DuelConfig::default()
        };
        let e = cfg.validate().unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::BadInput);
        assert_eq!(
            e.to_string(),
            "invalid --precisions 'fp32': is listed twice; name each once"
        );
        assert!(check_unique("batches", &[1usize, 32, 1]).is_err());
        assert!(check_unique("batches", &[1usize, 32]).is_ok());
    }

    /// Regression (issue 30): `"lr": 1e300` became infinity, then `null` on its way to the
    /// compute process, which answered `line 16: ... invalid type: null, expected f32`.
    #[test]
    fn lr_1e300_is_refused_naming_config_lr_with_the_clis_words() {
        let m = refused(r#"{"op":"duel","config":{"lr":1e300}}"#);
        assert_eq!(
            m,
            "config.lr: must be a positive finite number: 1e300 is beyond the range of a \
             32-bit float (±3.4e38)"
        );
        for (lr, why) in [
            ("-0.5", "not -0.5"),
            ("0", "not 0"),
            ("1e-60", "not 1e-60"),
            ("null", "invalid type: null"),
            ("\"fast\"", "invalid type: string"),
        ] {
            let m = refused(&format!(r#"{{"op":"duel","config":{{"lr":{lr}}}}}"#));
            assert!(m.starts_with("config.lr: "), "{lr}: {m}");
            assert!(m.contains(why), "{lr}: {m}");
            assert_clean(&m);
        }
        // Beyond a 64-bit float: the JSON itself is refused, still naming the field.
        let m = refused(r#"{"op":"duel","config":{"lr":1e400}}"#);
        assert!(
            m.starts_with("config.lr: not JSON: number out of range"),
            "{m}"
        );
        let m = refused(r#"{"op":"duel","config":{"dropout":-1e39}}"#);
        assert!(
            m.starts_with("config.dropout: must be a finite number: -1e39"),
            "{m}"
        );
        let m = refused(r#"{"op":"infer_bench","budget_ms":-5}"#);
        assert!(
            m.starts_with("budget_ms: must be a positive finite number"),
            "{m}"
        );
        // In an envelope, the path starts at the line.
        let (id, e) = parse_envelope(br#"{"id":16,"request":{"op":"duel","config":{"lr":1e300}}}"#)
            .unwrap_err();
        assert_eq!(id, Some(16));
        assert!(
            e.message
                .starts_with("request.config.lr: must be a positive finite number"),
            "{e}"
        );
        // The rule is the type's: serde_json alone refuses it too (no infinity, no null).
        let e = serde_json::from_str::<DuelConfig>(r#"{"lr":1e300}"#).unwrap_err();
        assert!(e.to_string().contains("positive finite"), "{e}");
        let ok = parse_request(br#"{"op":"duel","config":{"lr":3e38,"dropout":0}}"#).unwrap();
        assert!(matches!(ok, Request::Duel(d) if d.config.lr == 3e38 && d.config.dropout == 0.0));
    }

    #[test]
    fn any_f32_read_through_the_parser_must_fit() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Plain {
            x: f32,
            y: Option<f32>,
        }
        let e = typed::<Plain>("", json!({"x": 1.0, "y": 1e39})).unwrap_err();
        assert_eq!(e, "y: 1e39 is beyond the range of a 32-bit float (±3.4e38)");
        let p = typed::<Plain>("", json!({"x": -3.0e38, "y": null})).unwrap();
        assert_eq!((p.x, p.y), (-3.0e38, None));
    }

    #[test]
    fn parse_errors_name_the_field_by_its_path_without_internal_positions() {
        let cases = [
            (
                r#"{"op":"duel","config":{"train_limt":5}}"#,
                "config.train_limt: unknown field `train_limt`",
            ),
            (
                r#"{"op":"doctor","verbose":true}"#,
                "verbose: unknown field `verbose`",
            ),
            (r#"{"op":"run"}"#, "missing field `id`"),
            (
                r#"{"op":"make_coffee"}"#,
                "op: unknown operation `make_coffee`; expected one of doctor, ",
            ),
            (
                r#"{"op":7}"#,
                "op: must be a string naming the operation, not a number",
            ),
            (r#"{"config":{}}"#, "missing field `op`"),
            (
                r#"{"op":"duel","config":{"epochs":"two"}}"#,
                "config.epochs: invalid type: string \"two\"",
            ),
            (
                r#"{"op":"duel","config":{"precisions":["fp64"]}}"#,
                "config.precisions[0]: unknown variant `fp64`",
            ),
            (
                r#"{"op":"profile","what":{"target":"step","precision":"fp16"}}"#,
                "what: missing field `batch`",
            ),
            ("{\"op\":", "op: not JSON: EOF while parsing"),
            ("", "not JSON: EOF while parsing"),
            ("{} {}", "not JSON: trailing characters"),
            (
                r#"{"op":"duel","config":{"epochs":1},"config":{"epochs":9}}"#,
                "not JSON: the key `config` is given twice in one object",
            ),
            (
                r#"{"op":"duel","config":{"lr":0.1,"lr":1e300}}"#,
                "config: not JSON: the key `lr` is given twice",
            ),
        ];
        for (body, want) in cases {
            let m = refused(body);
            assert!(m.starts_with(want), "{body}: {m}");
            assert!(!m.contains("line 0"), "{m}");
        }
        // A line's id is answered when it can be read.
        let lines: [(&[u8], Option<u64>, &str); 6] = [
            (b"not json", None, "not JSON"),
            (
                br#"{"request":{"op":"doctor"}}"#,
                None,
                "missing field `id`",
            ),
            (
                br#"{"id":-1,"request":{"op":"doctor"}}"#,
                None,
                "id: must be a whole number",
            ),
            (br#"{"id":3}"#, Some(3), "missing field `request`"),
            (
                br#"{"id":3,"request":{"op":"doctor"},"x":1}"#,
                Some(3),
                "unknown field `x`",
            ),
            (
                br#"{"id":5,"request":{"op":"duel","config":{"epohcs":2}}}"#,
                Some(5),
                "request.config.epohcs: unknown field `epohcs`",
            ),
        ];
        for (line, id, want) in lines {
            let (got, e) = parse_envelope(line).unwrap_err();
            assert_eq!(got, id, "{e}");
            assert!(
                e.message.starts_with(want),
                "{}: {e}",
                String::from_utf8_lossy(line)
            );
        }
        let env = parse_envelope(br#"{"request":{"op":"cancel"},"id":2}"#).unwrap();
        assert_eq!(env.id, 2);
        assert_eq!(env.request, Request::Cancel(super::super::CancelRequest {}));
        assert!(parse_request_value(json!({"op":"duel","config":[]})).is_err());
    }
}
