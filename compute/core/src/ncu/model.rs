//! The data model of an imported Nsight Compute report: its kernels, their metrics (as printed
//! and in SI units) and rule results. What the importer builds and the panels read.

use serde::{Deserialize, Serialize};

use super::units;

/// Which ncu CSV layout a report was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `--page details`: one row per metric or rule result.
    Details,
    /// `--page raw`: metric names, units, then one row per kernel.
    Raw,
    /// `--print-summary per-kernel`: minimum, maximum and average per distinct kernel.
    Summary,
}

/// An imported ncu export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcuReport {
    /// The layout the export was in.
    pub format: Format,
    /// The profiled kernels, in the order they first appear.
    pub kernels: Vec<Kernel>,
    /// Things worth knowing that did not stop the import (skipped lines, replaced bytes).
    pub warnings: Vec<String>,
}

/// One profiled kernel launch (or, in a summary export, one distinct kernel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// ncu's result ID (the `ID` column); in a summary export, the kernel's 0-based position.
    pub id: u64,
    /// The full (demangled) function name as ncu printed it.
    pub name: String,
    /// The bare function identifier ([`short_name`]).
    pub short_name: String,
    /// Block dimensions (x, y, z).
    pub block: [u32; 3],
    /// Grid dimensions (x, y, z).
    pub grid: [u32; 3],
    /// Compute capability, e.g. `9.0`.
    pub cc: String,
    /// The device index, when the export gives one.
    pub device: Option<u32>,
    /// How many launches a summary row aggregates (summary exports only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocations: Option<u64>,
    /// The metrics, in file order.
    pub metrics: Vec<Metric>,
    /// The rule results (details exports only), in file order.
    pub rules: Vec<Rule>,
}

/// A metric value as printed: a number (thousands separators removed) or text (`n/a`,
/// `PolicySpread`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MetricValue {
    /// A finite number, in the printed unit.
    Number(f64),
    /// Anything else, verbatim.
    Text(String),
}

impl MetricValue {
    /// The number, if the value is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            MetricValue::Number(v) => Some(*v),
            MetricValue::Text(_) => None,
        }
    }
}

/// What a metric is, apart from its value: section, name and units. One key is shared by
/// every kernel that has the metric (a raw-page import holds millions of metrics, a few
/// thousand keys).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetricKey {
    /// The section's display name (`GPU Speed Of Light Throughput`); on the raw page, the
    /// metric's unit prefix (`sm`, `dram`, `launch`, ...).
    pub section: String,
    /// The metric's display name (`Duration`), or its raw name on the raw page.
    pub name: String,
    /// The unit as printed (`us`, `Gbyte/s`, `%`, or empty).
    pub unit: String,
    /// The unit of numeric values in SI (`second`, `byte`, `byte/second`, `hz`, or the printed
    /// unit when it has no SI scaling).
    pub si_unit: String,
}

impl MetricKey {
    /// A key for `unit`, its SI unit found by [`units::si_scale`].
    pub fn new(section: &str, name: &str, unit: &str) -> Self {
        let si_unit = units::si_scale(unit).map_or_else(|| unit.to_string(), |s| s.unit);
        MetricKey {
            section: section.to_string(),
            name: name.to_string(),
            unit: unit.to_string(),
            si_unit,
        }
    }
}

/// What only some exports give a metric: the `Body Item Label` and a summary's range; and
/// whether its printed value was an unreadable number.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct MetricExtra {
    label: Option<String>,
    min: Option<f64>,
    max: Option<f64>,
    unreadable: bool,
}

/// One metric of a kernel. In JSON it is one flat object: `section`, `name`, `unit`, `value`
/// (as printed: number or text), `si_value` and `si_unit` (`null` for text values), and, when
/// the export has them, `label`, `min` and `max`; `unreadable: true` marks a value printed as
/// a number that is not a finite one (`1e400`, `inf`, or finite but overflowing in SI units):
/// it is kept as text, without an SI value ([`Metric::unreadable`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    key: std::sync::Arc<MetricKey>,
    /// The value as printed (for a summary, the average).
    pub value: MetricValue,
    /// The value in base SI units (seconds, bytes, bytes/second, hertz); numbers in units
    /// without SI scaling (%, cycles, counts) are copied. `None` for text values.
    pub si_value: Option<f64>,
    extra: Option<Box<MetricExtra>>,
}

impl Metric {
    /// A metric of `key` with its printed value and SI value.
    pub fn new(key: std::sync::Arc<MetricKey>, value: MetricValue, si_value: Option<f64>) -> Self {
        Metric {
            key,
            value,
            si_value,
            extra: None,
        }
    }

    /// The key (section, name, units).
    pub fn key(&self) -> &std::sync::Arc<MetricKey> {
        &self.key
    }
    /// The section's display name, or the raw metric's unit prefix.
    pub fn section(&self) -> &str {
        &self.key.section
    }
    /// The metric's display or raw name.
    pub fn name(&self) -> &str {
        &self.key.name
    }
    /// The unit as printed.
    pub fn unit(&self) -> &str {
        &self.key.unit
    }
    /// The unit of [`Metric::si_value`]; `None` for text values.
    pub fn si_unit(&self) -> Option<&str> {
        self.si_value.map(|_| self.key.si_unit.as_str())
    }
    /// The `Body Item Label` (newer ncu versions), when present and not empty.
    pub fn label(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|e| e.label.as_deref())
    }
    /// The minimum over invocations, in the printed unit (summary exports only).
    pub fn min(&self) -> Option<f64> {
        self.extra.as_ref().and_then(|e| e.min)
    }
    /// The maximum over invocations, in the printed unit (summary exports only).
    pub fn max(&self) -> Option<f64> {
        self.extra.as_ref().and_then(|e| e.max)
    }

    fn extra_mut(&mut self) -> &mut MetricExtra {
        self.extra.get_or_insert_with(Box::default)
    }
    /// Sets the `Body Item Label`.
    pub fn set_label(&mut self, label: Option<String>) {
        if label.is_some() || self.extra.is_some() {
            self.extra_mut().label = label;
        }
    }
    /// Whether the printed value looks like a number but is not a usable one: not finite
    /// (`1e400`, `inf`) or not finite once in SI units (`1e300 Pbyte`). The value is then
    /// [`MetricValue::Text`] as printed and [`Metric::si_value`] is `None`; the panels show it
    /// as an unreadable value.
    pub fn unreadable(&self) -> bool {
        self.extra.as_ref().is_some_and(|e| e.unreadable)
    }
    /// Marks the value as unreadable (see [`Metric::unreadable`]).
    pub fn set_unreadable(&mut self, unreadable: bool) {
        if unreadable || self.extra.is_some() {
            self.extra_mut().unreadable = unreadable;
        }
    }
    /// Sets a summary's minimum and maximum.
    pub fn set_range(&mut self, min: Option<f64>, max: Option<f64>) {
        if min.is_some() || max.is_some() || self.extra.is_some() {
            let e = self.extra_mut();
            e.min = min;
            e.max = max;
        }
    }
}

/// The flat JSON shape of a [`Metric`].
#[derive(Serialize, Deserialize)]
pub(crate) struct MetricJson<'a> {
    #[serde(borrow)]
    section: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    unit: std::borrow::Cow<'a, str>,
    value: MetricValue,
    si_value: Option<f64>,
    #[serde(borrow)]
    si_unit: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    label: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max: Option<f64>,
    #[serde(default, skip_serializing_if = "is_false")]
    unreadable: bool,
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use std::borrow::Cow::Borrowed;
        MetricJson {
            section: Borrowed(self.section()),
            name: Borrowed(self.name()),
            unit: Borrowed(self.unit()),
            value: self.value.clone(),
            si_value: self.si_value,
            si_unit: self.si_unit().map(Borrowed),
            label: self.label().map(Borrowed),
            min: self.min(),
            max: self.max(),
            unreadable: self.unreadable(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let j = MetricJson::deserialize(d)?;
        let si_unit = match &j.si_unit {
            Some(u) => u.to_string(),
            None => units::si_scale(&j.unit).map_or_else(|| j.unit.to_string(), |s| s.unit),
        };
        let key = MetricKey {
            section: j.section.into_owned(),
            name: j.name.into_owned(),
            unit: j.unit.into_owned(),
            si_unit,
        };
        let mut m = Metric::new(std::sync::Arc::new(key), j.value, j.si_value);
        m.set_label(j.label.map(|l| l.into_owned()));
        m.set_range(j.min, j.max);
        m.set_unreadable(j.unreadable);
        Ok(m)
    }
}

/// The result of one ncu guided-analysis rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// The section identifier the rule belongs to (`SpeedOfLight`, `Occupancy`).
    pub section: String,
    /// The rule's name (`SOLBottleneck`, `CPIStall`).
    pub name: String,
    /// `OPT` (optimisation opportunity), `INF` (information) or `WRN` (warning).
    pub rule_type: String,
    /// The rule's message.
    pub description: String,
    /// `local` or `global`, when the rule estimates a speedup.
    pub speedup_type: Option<String>,
    /// The estimated speedup, in percent of the kernel's duration.
    pub speedup: Option<f64>,
}

impl Kernel {
    /// The first metric named `name` in section `section`.
    pub fn metric(&self, section: &str, name: &str) -> Option<&Metric> {
        self.metrics
            .iter()
            .find(|m| m.name() == name && m.section() == section)
    }

    /// The first metric named `name`, in any section.
    pub fn metric_named(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name() == name)
    }

    /// The printed number of metric `section`/`name`.
    pub fn number(&self, section: &str, name: &str) -> Option<f64> {
        self.metric(section, name).and_then(|m| m.value.as_f64())
    }
}
