//! Python controllers (docs/bring-your-own.md): a [`Controller`] and a [`ReceiverEstimator`]
//! that call a Python object, and the factory the core's builder tries for names its registry
//! does not know (`controllers::BuildContext::external`).
//!
//! The simulation runs with the GIL released; each call into Python takes it for that call
//! only. Only the methods the class defines are called (`ratelab.byo.loader._build` says which).
//! Per-packet data goes over as numpy columns. A failure (an exception, or an invalid update)
//! is recorded once in [`Shared`], raises the run's abort flag, and turns the failing object
//! into a no-op; the driver then raises it as `ratelab.byo.ControllerError`.

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};
use ratelab_core::controller::{Constraints, Controller, ProbeCluster, ReceivedPacket, ReceiverEstimator, SentPacket, TransportFeedback, Update};
use ratelab_core::controllers::r3net::RateFollower;
use ratelab_core::controllers::{BuildContext, Built, ExternalFactory};
use ratelab_core::{Bitrate, Bytes, ConfigError, Duration, Time};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const LOADER: &str = "ratelab.byo.loader";

/// What a run's Python controllers share with its driver: the abort flag the driver watches and
/// the first failure.
#[derive(Default)]
pub struct Shared {
    pub abort: Arc<AtomicBool>,
    failure: Mutex<Option<(String, Option<PyErr>)>>,
    /// Python controllers built so far (the driver arms its abort check only if there are any).
    built: AtomicUsize,
}

impl Shared {
    /// Shared state whose abort flag is `abort` (a live run's stop flag).
    pub fn with_abort(abort: Arc<AtomicBool>) -> Arc<Shared> { Arc::new(Shared { abort, ..Default::default() }) }

    pub fn any_built(&self) -> bool { self.built.load(Ordering::Relaxed) > 0 }

    fn fail(&self, message: String, err: Option<PyErr>) {
        if let Ok(mut f) = self.failure.lock() {
            if f.is_none() { *f = Some((message, err)); }
        }
        self.abort.store(true, Ordering::SeqCst);
    }

    /// The recorded failure as a `ratelab.byo.ControllerError` (None if nothing failed).
    pub fn take_error(&self, py: Python<'_>) -> Option<PyErr> {
        let (message, err) = self.failure.lock().ok()?.take()?;
        // Ctrl-C while user code ran: an interrupt, not a controller error.
        if let Some(e) = err.as_ref().filter(|e| e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)) { return Some(e.clone_ref(py)); }
        let cause = err.as_ref().map(|e| e.value_bound(py).clone().into_any());
        let tb = err.as_ref().and_then(|e| e.traceback_bound(py)).map(|t| t.into_any());
        match py.import_bound(LOADER).and_then(|m| m.call_method1("_controller_error", (message.clone(), cause, tb))) {
            Ok(exc) => Some(PyErr::from_value_bound(exc)),
            Err(_) => Some(pyo3::exceptions::PyRuntimeError::new_err(message)),
        }
    }
}

/// The factory handed to the core: builds `file.py:Class`, `module:Class` and entry-point names.
pub fn factory(shared: Arc<Shared>) -> ExternalFactory {
    Arc::new(move |name: &str, params: &serde_json::Value, cx: &BuildContext| Python::with_gil(|py| build(py, name, params, cx, &shared)))
}

/// The Python API classes the arguments are made of.
struct Api { feedback: PyObject, constraints: PyObject, sent: PyObject, received: PyObject, update: PyObject, probe: PyObject }

impl Api {
    fn load(py: Python<'_>) -> PyResult<Arc<Api>> {
        let m = py.import_bound("ratelab.byo.api")?;
        let get = |n: &str| m.getattr(n).map(|v| v.unbind());
        Ok(Arc::new(Api { feedback: get("Feedback")?, constraints: get("Constraints")?, sent: get("SentPacket")?, received: get("ReceivedPackets")?, update: get("Update")?, probe: get("Probe")? }))
    }
}

fn build(py: Python<'_>, name: &str, params: &serde_json::Value, cx: &BuildContext, shared: &Arc<Shared>) -> Option<Result<Built, ConfigError>> {
    let loader = match py.import_bound(LOADER) {
        Ok(m) => m,
        Err(e) => return name.contains(':').then(|| Err(spec_error(py, name, e))),
    };
    let v = match loader.call_method1("_build", (name, params.to_string(), cx.seed)) {
        Ok(v) if v.is_none() => return None,
        Ok(v) => v,
        Err(e) => return Some(Err(spec_error(py, name, e))),
    };
    Some(make(py, name, &v, shared).map_err(|e| spec_error(py, name, e)))
}

fn make(py: Python<'_>, name: &str, v: &Bound<'_, PyAny>, shared: &Arc<Shared>) -> PyResult<Built> {
    let (obj, side, tick_s, events, pacing_factor): (PyObject, String, f64, Vec<String>, f64) = v.extract()?;
    let api = Api::load(py)?;
    shared.built.fetch_add(1, Ordering::Relaxed);
    let core = Core { obj, label: name.to_string(), api, shared: shared.clone(), failed: false };
    let tick = Duration::from_secs_f64(tick_s);
    if side == "receiver" {
        let est = PyEstimator { core, tick, seq: Vec::new(), size: Vec::new(), send: Vec::new(), recv: Vec::new(), rtt_s: f64::NAN };
        return Ok(Built { sender: Box::new(RateFollower::new(pacing_factor)), receiver: Some(Box::new(est)) });
    }
    let has = |m: &str| events.iter().any(|e| e == m);
    let ev = Events {
        feedback: has("on_feedback"), tick: has("on_tick"), packet_sent: has("on_packet_sent"), rtt: has("on_rtt_update"),
        remote: has("on_remote_estimate"), queue: has("on_sender_queue"), constraints: has("on_constraints"),
        route: has("on_route_change"),
    };
    Ok(Built::sender(PyController { core, tick, ev, next_probe_id: 1 << 20 }))
}

/// A loader error as the core's configuration error: `SpecError` carries its field.
fn spec_error(py: Python<'_>, name: &str, e: PyErr) -> ConfigError {
    let v = e.value_bound(py);
    let attr = |a: &str| v.getattr(a).ok().and_then(|x| x.extract::<String>().ok());
    match (attr("field"), attr("message")) {
        (Some(field), Some(message)) => ConfigError::new(field, message),
        _ => ConfigError::new("controller", format!("{name}: {}", exc_line(py, &e))),
    }
}

/// `ZeroDivisionError: division by zero`, on one line.
fn exc_line(py: Python<'_>, e: &PyErr) -> String {
    let ty = e.get_type_bound(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
    let msg = e.value_bound(py).str().map(|s| s.to_string()).unwrap_or_default();
    let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    if msg.is_empty() { ty } else { format!("{ty}: {msg}") }
}

/// The Python object and what every call needs.
struct Core {
    obj: PyObject,
    /// The controller's name as given (`my_cc.py:MyCC`), for error lines.
    label: String,
    api: Arc<Api>,
    shared: Arc<Shared>,
    failed: bool,
}

impl Core {
    /// Call `method` with the arguments `args` builds; `Ok(None)` once anything has failed.
    fn call<'py>(&mut self, py: Python<'py>, method: &str, now: Time, args: impl FnOnce(Python<'py>, &Api) -> PyResult<Bound<'py, PyTuple>>) -> Option<Bound<'py, PyAny>> {
        if self.failed || self.shared.abort.load(Ordering::Relaxed) { return None; }
        match args(py, &self.api).and_then(|a| self.obj.bind(py).call_method1(method, a)) {
            Ok(v) => Some(v),
            Err(e) => { let line = exc_line(py, &e); self.fail(method, now, line, Some(e)); None }
        }
    }

    fn fail(&mut self, method: &str, now: Time, what: String, err: Option<PyErr>) {
        self.failed = true;
        self.shared.fail(format!("{}.{method} at t={:.3} s: {what}", self.label, now.as_secs_f64()), err);
    }

    /// Call a sender-side event and convert what it returned into an [`Update`].
    fn event<'py>(&mut self, py: Python<'py>, method: &str, now: Time, next_probe_id: &mut u32, args: impl FnOnce(Python<'py>, &Api) -> PyResult<Bound<'py, PyTuple>>) -> Update {
        let Some(v) = self.call(py, method, now, args) else { return Update::default() };
        match to_update(py, &self.api, &v, next_probe_id) {
            Ok(u) => u,
            Err(what) => { self.fail(method, now, format!("returned {what}"), None); Update::default() }
        }
    }
}

fn secs(t: Time) -> f64 { t.as_secs_f64() }

/// A rate or size from Python: a finite number ≥ 0 (`inf` allowed where `allow_inf`).
fn number(v: &Bound<'_, PyAny>, key: &str, allow_inf: bool) -> Result<Option<f64>, String> {
    if v.is_none() { return Ok(None); }
    if v.is_instance_of::<PyBool>() { return Err(format!("a non-numeric {key} ({})", repr(v))); }
    let x: f64 = v.extract().map_err(|_| format!("a non-numeric {key} ({})", repr(v)))?;
    if x.is_nan() || (x.is_infinite() && !(allow_inf && x > 0.0)) { return Err(format!("{key} = {x} (must be a finite number ≥ 0)")); }
    if x < 0.0 { return Err(format!("a negative {key} ({x})")); }
    Ok(Some(x))
}

fn repr(v: &Bound<'_, PyAny>) -> String {
    let s = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    if s.chars().count() > 60 { format!("{}…", s.chars().take(60).collect::<String>()) } else { s }
}

const UPDATE_KEYS: &str = "target_bps, pacing_bps, padding_bps, cwnd_bytes, probes";

/// What a sender-side method returned: None, a number (the target rate), an `Update` or a dict.
fn to_update(py: Python<'_>, api: &Api, v: &Bound<'_, PyAny>, next_probe_id: &mut u32) -> Result<Update, String> {
    if v.is_none() { return Ok(Update::default()); }
    let mut u = Update::default();
    let rate = |x: Option<f64>| x.map(Bitrate::from_bps_f64);
    if !v.is_instance_of::<PyBool>() && v.extract::<f64>().is_ok() {
        // A bare number is the rate: target and pacing (as `Update::rates(x, 1.0)`).
        u.target_rate = rate(number(v, "rate", false)?);
        u.pacing_rate = u.target_rate;
        return Ok(u);
    }
    let mut set = |key: &str, val: &Bound<'_, PyAny>| -> Result<(), String> {
        match key {
            "target_bps" => u.target_rate = rate(number(val, key, false)?),
            "pacing_bps" => u.pacing_rate = rate(number(val, key, false)?),
            "padding_bps" => u.padding_rate = rate(number(val, key, false)?),
            "cwnd_bytes" => u.cwnd = number(val, key, true)?.map(|w| if w.is_infinite() { Bytes::INFINITY } else { Bytes::new(w.round() as i64) }),
            "probes" => u.probes = probes(py, api, val, next_probe_id)?,
            _ => return Err(format!("an update with unknown key '{key}' (known: {UPDATE_KEYS})")),
        }
        Ok(())
    };
    if let Ok(d) = v.downcast::<PyDict>() {
        for (k, val) in d.iter() {
            let key: String = k.extract().map_err(|_| format!("an update with a non-string key {}", repr(&k)))?;
            set(&key, &val)?;
        }
        return Ok(u);
    }
    if v.is_instance(api.update.bind(py)).unwrap_or(false) {
        for key in ["target_bps", "pacing_bps", "padding_bps", "cwnd_bytes", "probes"] {
            let val = v.getattr(key).map_err(|e| e.to_string())?;
            set(key, &val)?;
        }
        return Ok(u);
    }
    Err(format!("{} (expected an Update, a dict with keys {UPDATE_KEYS}, a number or None)", repr(v)))
}

fn probes(py: Python<'_>, api: &Api, v: &Bound<'_, PyAny>, next_id: &mut u32) -> Result<Vec<ProbeCluster>, String> {
    if v.is_none() { return Ok(Vec::new()); }
    let list = v.downcast::<PyList>().map_err(|_| format!("probes = {} (expected a list of Probe)", repr(v)))?;
    let mut out = Vec::with_capacity(list.len());
    for p in list.iter() {
        let get = |k: &str| -> Option<Bound<'_, PyAny>> {
            if let Ok(d) = p.downcast::<PyDict>() { d.get_item(k).ok().flatten() } else { p.getattr(k).ok() }
        };
        if !(p.is_instance_of::<PyDict>() || p.is_instance(api.probe.bind(py)).unwrap_or(false)) {
            return Err(format!("a probe {} (expected ratelab.Probe or a dict)", repr(&p)));
        }
        let rate = get("rate_bps").map(|r| number(&r, "probe rate_bps", false)).transpose()?.flatten().ok_or("a probe without rate_bps")?;
        let min_packets = get("min_packets").map(|r| number(&r, "probe min_packets", false)).transpose()?.flatten().unwrap_or(5.0);
        let min_dur = get("min_duration_s").map(|r| number(&r, "probe min_duration_s", false)).transpose()?.flatten().unwrap_or(0.015);
        let id = match get("id").filter(|x| !x.is_none()) {
            Some(x) => x.extract::<u32>().map_err(|_| format!("a probe id {} (expected an integer ≥ 0)", repr(&x)))?,
            None => { *next_id = next_id.wrapping_add(1); *next_id }
        };
        out.push(ProbeCluster { id, rate: Bitrate::from_bps_f64(rate), min_packets: min_packets.min(1e6) as u32, min_duration: Duration::from_secs_f64(min_dur.min(60.0)) });
    }
    Ok(out)
}

fn constraints_obj<'py>(py: Python<'py>, api: &Api, c: &Constraints) -> PyResult<Bound<'py, PyAny>> {
    api.constraints.bind(py).call1((c.min_rate.bps_f64(), c.max_rate.bps_f64(), c.start_rate.bps_f64()))
}

/// Which optional events the class defines.
struct Events { feedback: bool, tick: bool, packet_sent: bool, rtt: bool, remote: bool, queue: bool, constraints: bool, route: bool }

/// A sender-side controller written in Python.
struct PyController { core: Core, tick: Duration, ev: Events, next_probe_id: u32 }

impl PyController {
    fn event<'py>(&mut self, py: Python<'py>, method: &str, now: Time, args: impl FnOnce(Python<'py>, &Api) -> PyResult<Bound<'py, PyTuple>>) -> Update {
        self.core.event(py, method, now, &mut self.next_probe_id, args)
    }
}

impl Controller for PyController {
    fn on_start(&mut self, now: Time, c: Constraints) -> Update {
        Python::with_gil(|py| self.event(py, "on_start", now, |py, api| Ok(PyTuple::new_bound(py, [secs(now).into_py(py), constraints_obj(py, api, &c)?.unbind()]))))
    }

    fn on_packet_sent(&mut self, p: &SentPacket) -> Update {
        if !self.ev.packet_sent || self.core.failed { return Update::default(); }
        let now = p.send_time;
        Python::with_gil(|py| self.event(py, "on_packet_sent", now, |py, api| {
            let probe = p.probe_cluster.map_or(-1, i64::from);
            let obj = api.sent.bind(py).call1((p.seq, p.size.get(), secs(p.send_time), probe, p.is_padding, p.data_in_flight.get()))?;
            Ok(PyTuple::new_bound(py, [obj]))
        }))
    }

    fn on_feedback(&mut self, fb: &TransportFeedback) -> Update {
        if !self.ev.feedback || self.core.failed { return Update::default(); }
        let now = fb.feedback_time;
        Python::with_gil(|py| self.event(py, "on_feedback", now, |py, api| {
            let n = fb.packets.len();
            let (mut seq, mut size, mut send, mut recv, mut probe, mut pad) =
                (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
            for p in &fb.packets {
                seq.push(p.sent.seq as i64);
                size.push(p.sent.size.get());
                send.push(secs(p.sent.send_time));
                recv.push(p.recv_time.map_or(f64::NAN, secs));
                probe.push(p.sent.probe_cluster.map_or(-1, i64::from));
                pad.push(p.sent.is_padding);
            }
            let args = (
                secs(fb.feedback_time), fb.report_time.map(secs), fb.prior_in_flight.get(), fb.data_in_flight.get(),
                seq.into_pyarray_bound(py), size.into_pyarray_bound(py), send.into_pyarray_bound(py), recv.into_pyarray_bound(py),
                probe.into_pyarray_bound(py), pad.into_pyarray_bound(py),
            );
            let obj = api.feedback.bind(py).call1(args)?;
            Ok(PyTuple::new_bound(py, [obj]))
        }))
    }

    fn on_tick(&mut self, now: Time) -> Update {
        if !self.ev.tick || self.core.failed { return Update::default(); }
        Python::with_gil(|py| self.event(py, "on_tick", now, |py, _| Ok(PyTuple::new_bound(py, [secs(now)]))))
    }

    fn tick_interval(&self) -> Duration { self.tick }

    fn on_rtt_update(&mut self, now: Time, rtt: Duration) -> Update {
        if !self.ev.rtt || self.core.failed { return Update::default(); }
        Python::with_gil(|py| self.event(py, "on_rtt_update", now, |py, _| Ok(PyTuple::new_bound(py, [secs(now), rtt.as_secs_f64()]))))
    }

    fn on_constraints(&mut self, now: Time, c: Constraints) -> Update {
        if !self.ev.constraints || self.core.failed { return Update::default(); }
        Python::with_gil(|py| self.event(py, "on_constraints", now, |py, api| Ok(PyTuple::new_bound(py, [secs(now).into_py(py), constraints_obj(py, api, &c)?.unbind()]))))
    }

    fn on_remote_estimate(&mut self, now: Time, rate: Bitrate) -> Update {
        if !self.ev.remote || self.core.failed { return Update::default(); }
        Python::with_gil(|py| self.event(py, "on_remote_estimate", now, |py, _| Ok(PyTuple::new_bound(py, [secs(now), rate.bps_f64()]))))
    }

    fn on_sender_queue(&mut self, now: Time, queue: Bytes) -> Update {
        if !self.ev.queue || self.core.failed { return Update::default(); }
        Python::with_gil(|py| self.event(py, "on_sender_queue", now, |py, _| Ok(PyTuple::new_bound(py, [secs(now).into_py(py), queue.get().into_py(py)]))))
    }

    fn on_route_change(&mut self, now: Time, c: Constraints) -> Update {
        if !self.ev.route || self.core.failed { return Update::default(); }
        Python::with_gil(|py| self.event(py, "on_route_change", now, |py, api| Ok(PyTuple::new_bound(py, [secs(now).into_py(py), constraints_obj(py, api, &c)?.unbind()]))))
    }
}

/// A receiver-side estimator written in Python: packets are buffered here and handed over as
/// columns at each tick.
struct PyEstimator { core: Core, tick: Duration, seq: Vec<i64>, size: Vec<i64>, send: Vec<f64>, recv: Vec<f64>, rtt_s: f64 }

impl ReceiverEstimator for PyEstimator {
    fn on_packet_received(&mut self, p: &ReceivedPacket) {
        if self.core.failed { return; }
        self.seq.push(p.seq as i64);
        self.size.push(p.size.get());
        self.send.push(secs(p.send_time));
        self.recv.push(secs(p.recv_time));
    }

    fn on_tick(&mut self, now: Time) -> Option<Bitrate> {
        if self.core.failed { return None; }
        let cols = (std::mem::take(&mut self.seq), std::mem::take(&mut self.size), std::mem::take(&mut self.send), std::mem::take(&mut self.recv));
        let rtt = self.rtt_s;
        Python::with_gil(|py| {
            let v = self.core.call(py, "on_tick", now, |py, api| {
                let obj = api.received.bind(py).call1((cols.0.into_pyarray_bound(py), cols.1.into_pyarray_bound(py), cols.2.into_pyarray_bound(py), cols.3.into_pyarray_bound(py), rtt))?;
                Ok(PyTuple::new_bound(py, [secs(now).into_py(py), obj.unbind()]))
            })?;
            match number(&v, "rate", false) {
                Ok(r) => r.map(Bitrate::from_bps_f64),
                Err(what) => { self.core.fail("on_tick", now, format!("returned {what}"), None); None }
            }
        })
    }

    fn tick_interval(&self) -> Duration { self.tick }

    fn on_rtt_update(&mut self, _now: Time, rtt: Duration) { self.rtt_s = rtt.as_secs_f64(); }
}
