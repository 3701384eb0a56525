//! Live mode in the binding: `live_run`, `live_send`, `live_recv`, `emulate`. Each runs its
//! component on a Rust thread while the calling Python thread waits with the GIL released and
//! checks for Ctrl-C every 100 ms; on an interrupt it raises the component's stop flag, waits for
//! it to wind down, and re-raises.

use crate::pyctl::{factory, Shared};
use crate::{config_err, guarded, json_to_py, load_scenario, panic_err, read_trace};
use numpy::IntoPyArray;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ratelab_core::metrics::{PacketLog, SeriesLog};
use ratelab_core::scenario::FlowConfig;
use ratelab_live::emulator::{Emulator, EmulatorOptions};
use ratelab_live::net::{resolve, LiveClock};
use ratelab_live::receiver::{FeedbackFormat, Receiver, ReceiverOptions};
use ratelab_live::run::{live_run as core_live_run, LiveRunOptions};
use ratelab_live::sender::{Sender, SenderOptions};
use ratelab_live::StopFlag;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run `job` on its own thread; poll for Ctrl-C while it runs (GIL released between polls).
/// With `keep_on_interrupt`, Ctrl-C just stops the job and its result is returned (a receiver
/// or emulator is normally stopped that way); otherwise the interrupt is re-raised.
fn run_interruptible<T: Send + 'static>(py: Python<'_>, what: &str, stop: StopFlag, keep_on_interrupt: bool, job: impl FnOnce() -> T + Send + 'static) -> PyResult<T> {
    let handle = std::thread::Builder::new().name(format!("ratelab-{what}")).spawn(move || catch_unwind(AssertUnwindSafe(job)))
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the {what} thread: {e}")))?;
    let mut interrupted: Option<PyErr> = None;
    while !handle.is_finished() {
        py.allow_threads(|| std::thread::sleep(std::time::Duration::from_millis(100)));
        if interrupted.is_none() {
            if let Err(e) = py.check_signals() { stop.raise(); interrupted = Some(e); }
        }
    }
    let out = py.allow_threads(|| handle.join()).map_err(|_| panic_err(what))?.map_err(|_| panic_err(what))?;
    match interrupted { Some(e) if !keep_on_interrupt => Err(e), _ => Ok(out) }
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(py: Python<'_>, what: &str, s: &str) -> PyResult<T> {
    let de = &mut serde_json::Deserializer::from_str(s);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        config_err(py, ratelab_core::ConfigError::new(if path == "." { what.to_string() } else { format!("{what}.{path}") }, e.into_inner().to_string()))
    })
}

fn format_of(s: &str) -> PyResult<FeedbackFormat> {
    match s { "twcc" => Ok(FeedbackFormat::Twcc), "rfc8888" => Ok(FeedbackFormat::Rfc8888), _ => Err(PyValueError::new_err(format!("unknown feedback format '{s}' (twcc, rfc8888)"))) }
}

pub(crate) fn addr(s: &str) -> PyResult<std::net::SocketAddr> { resolve(s).map_err(PyValueError::new_err) }

/// A dict of numpy arrays, one per named field of a columnar log.
macro_rules! columns {
    ($py:expr, $log:expr, $($col:ident),+ $(,)?) => {{
        let d = PyDict::new_bound($py);
        $( d.set_item(stringify!($col), $log.$col.into_pyarray_bound($py))?; )+
        Ok(d.into_any().unbind())
    }};
}

/// Columns of a time-series log as numpy arrays (shared by `Simulation` and the live runs).
pub(crate) fn series_dict(py: Python<'_>, s: SeriesLog) -> PyResult<PyObject> {
    columns!(py, s, t_s, flow, target_kbps, encoder_kbps, pacing_kbps, send_kbps, recv_kbps, owd_ms, capacity_kbps, queue_ms, cwnd_bytes, lost_packets, freezes, fps, width, height)
}

/// Columns of a packet log as numpy arrays (shared by `Simulation` and the live runs).
pub(crate) fn packets_dict(py: Python<'_>, log: PacketLog) -> PyResult<PyObject> {
    columns!(py, log, flow, seq, size, send_s, recv_s, lost)
}

pub(crate) fn to_py<T: serde::Serialize>(py: Python<'_>, v: &T) -> PyResult<PyObject> {
    json_to_py(py, &serde_json::to_value(v).map_err(|e| PyRuntimeError::new_err(e.to_string()))?)
}

/// Run a scenario's media flows live on loopback (emulator, and a receiver and a sender per
/// flow, real time; `controller` replaces every media flow's). Returns a dict
/// with `summary` (as `Simulation.summary()`), `details` (per component), `series`, `packets`.
#[pyfunction]
#[pyo3(signature = (scenario_json, seed=1, controller=None, feedback="twcc", capture=None))]
pub fn live_run(py: Python<'_>, scenario_json: &str, seed: u64, controller: Option<String>, feedback: &str, capture: Option<String>) -> PyResult<PyObject> {
    let sc = load_scenario(py, scenario_json)?;
    let stop = StopFlag::new();
    let python = Shared::with_abort(stop.shared());
    let external = Some(factory(python.clone()));
    let o = LiveRunOptions { seed, controller, format: format_of(feedback)?, stop: stop.clone(), capture, external, ..Default::default() };
    let r = run_interruptible(py, "live-run", stop, false, move || core_live_run(&sc, &o))?;
    if let Some(e) = python.take_error(py) { return Err(e); }
    let r = r.map_err(|e| config_err(py, e))?;
    let d = PyDict::new_bound(py);
    d.set_item("summary", to_py(py, &r.summary)?)?;
    d.set_item("details", to_py(py, &r.details)?)?;
    d.set_item("series", series_dict(py, r.series)?)?;
    d.set_item("packets", packets_dict(py, r.packets)?)?;
    Ok(d.into_any().unbind())
}

/// Send one media flow to `to` (`flow_json`: the scenario schema of one media flow;
/// `options_json`: sender options). Returns the sender's statistics.
#[pyfunction]
#[pyo3(signature = (to, flow_json, options_json="{}", bind="0.0.0.0:0"))]
pub fn live_send(py: Python<'_>, to: &str, flow_json: &str, options_json: &str, bind: &str) -> PyResult<PyObject> {
    let flow: FlowConfig = parse_json(py, "flow", flow_json)?;
    let opts: SenderOptions = parse_json(py, "options", options_json)?;
    opts.validate(&flow).map_err(|e| config_err(py, e))?;
    let (peer, bind) = (addr(to)?, addr(bind)?);
    let stop = StopFlag::new();
    let name = flow.controller.clone();
    let python = Shared::with_abort(stop.shared());
    let ext = Some(factory(python.clone()));
    let s = guarded("live sender setup", || Sender::new_ext(&flow, opts, bind, peer, LiveClock::new(), None, stop.clone(), ext))?.map_err(|e| {
        if e.starts_with("cannot bind") { PyOSError::new_err(e) } else { PyValueError::new_err(e) }
    })?;
    let r = run_interruptible(py, "sender", stop, true, move || s.run(&name))?;
    if let Some(e) = python.take_error(py) { return Err(e); }
    to_py(py, &r.stats)
}

/// Receive on `listen` (only from `peer` if given), send feedback back. Returns statistics.
#[pyfunction]
#[pyo3(signature = (listen, flow_json="{\"kind\": \"media\"}", options_json="{}", peer=None))]
pub fn live_recv(py: Python<'_>, listen: &str, flow_json: &str, options_json: &str, peer: Option<&str>) -> PyResult<PyObject> {
    let flow: FlowConfig = parse_json(py, "flow", flow_json)?;
    let opts: ReceiverOptions = parse_json(py, "options", options_json)?;
    opts.validate(&flow).map_err(|e| config_err(py, e))?;
    let listen = addr(listen)?;
    let peer = peer.map(addr).transpose()?;
    let stop = StopFlag::new();
    let python = Shared::with_abort(stop.shared());
    let ext = Some(factory(python.clone()));
    let r = guarded("live receiver setup", || Receiver::new_ext(&flow, opts, listen, peer, LiveClock::new(), 1, stop.clone(), ext))?.map_err(PyOSError::new_err)?;
    let res = run_interruptible(py, "receiver", stop, true, move || r.run())?;
    if let Some(e) = python.take_error(py) { return Err(e); }
    to_py(py, &res.stats)
}

/// Relay UDP between the first client of `listen` and `forward`, applying the link model.
#[pyfunction]
#[pyo3(signature = (listen, forward, options_json="{}"))]
pub fn emulate(py: Python<'_>, listen: &str, forward: &str, options_json: &str) -> PyResult<PyObject> {
    let mut opts: EmulatorOptions = parse_json(py, "options", options_json)?;
    for link in opts.links_mut() { read_trace(py, link)?; }
    opts.validate().map_err(|e| config_err(py, e))?;
    opts.keep_series = false; // unused here; memory stays flat however long it relays
    let (listen, forward) = (addr(listen)?, addr(forward)?);
    let stop = StopFlag::new();
    let e = guarded("emulator setup", || Emulator::new(opts, listen, forward, LiveClock::new(), stop.clone()))?.map_err(|e| {
        if e.starts_with("cannot bind") { PyOSError::new_err(e) } else { config_err(py, ratelab_core::ConfigError::new("", e)) }
    })?;
    let r = run_interruptible(py, "emulator", stop, true, move || e.run())?;
    to_py(py, &r.stats)
}
