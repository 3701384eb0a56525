//! The emulator in the background for the browser harness: `emulator_start` relays explicit
//! routes (each a sender and its receiver, e.g. two RTCPeerConnections of one page) on its own
//! Rust thread, without the GIL, until `stop()`; meanwhile `drain_packets()` hands over what it
//! did to each data datagram (and the link series) so that Python can stream it to Parquet.

use crate::live::{addr, parse_json, to_py};
use crate::{config_err, panic_err, read_trace};
use numpy::IntoPyArray;
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ratelab_live::emulator::{Emulator, EmulatorOptions, EmulatorResult, Recorder, RouteConfig};
use ratelab_live::net::LiveClock;
use ratelab_live::StopFlag;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::JoinHandle;

/// Most per-datagram records held between two drains (about 60 MB); beyond, they are counted.
const DEFAULT_RECORD_CAP: usize = 1_000_000;

type Outcome = std::thread::Result<EmulatorResult>;

/// A running emulator (`emulator_start`). `stop()` ends it and returns its statistics.
#[pyclass(module = "ratelab._core")]
pub struct EmulatorHandle {
    addr: SocketAddr,
    stop: StopFlag,
    recorder: Recorder,
    thread: Option<JoinHandle<Outcome>>,
    stats: Option<PyObject>,
}

/// Start relaying `routes_json` (a list of {sender, receiver, direction, data_delay_ms,
/// return_delay_ms}) on `listen` through the links of `options_json` (EmulatorOptions: link,
/// reverse_link, route_changes, duration_s, seed, ...; traces are read here). `record_cap`: most per-datagram
/// records kept between two `drain_packets()`.
#[pyfunction]
#[pyo3(signature = (listen, routes_json, options_json="{}", record_cap=DEFAULT_RECORD_CAP))]
pub fn emulator_start(py: Python<'_>, listen: &str, routes_json: &str, options_json: &str, record_cap: usize) -> PyResult<EmulatorHandle> {
    let mut opts: EmulatorOptions = parse_json(py, "options", options_json)?;
    let routes: Vec<RouteConfig> = parse_json(py, "routes", routes_json)?;
    for link in opts.links_mut() { read_trace(py, link)?; }
    opts.validate().map_err(|e| config_err(py, e))?;
    opts.keep_series = false; // the recorder carries the series
    let routes = opts.routes(&routes).map_err(|e| config_err(py, e))?;
    let listen = addr(listen)?;
    let stop = StopFlag::new();
    let recorder = Recorder::new(record_cap.max(1));
    let first = routes[0].receiver;
    let emu = catch_unwind(AssertUnwindSafe(|| Emulator::new(opts, listen, first, LiveClock::new(), stop.clone()))).map_err(|_| panic_err("emulator setup"))?
        .map_err(|e| if e.starts_with("cannot bind") { PyOSError::new_err(e) } else { config_err(py, ratelab_core::ConfigError::new("", e)) })?
        .with_routes(routes).with_recorder(recorder.clone());
    let addr = emu.local_addr().ok_or_else(|| PyOSError::new_err("the emulator socket has no address"))?;
    let thread = std::thread::Builder::new().name("ratelab-emulator".into()).spawn(move || catch_unwind(AssertUnwindSafe(|| emu.run())))
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the emulator thread: {e}")))?;
    Ok(EmulatorHandle { addr, stop, recorder, thread: Some(thread), stats: None })
}

#[pymethods]
impl EmulatorHandle {
    /// `host:port` the emulator listens on (where every datagram of the routes goes).
    fn local_addr(&self) -> String { self.addr.to_string() }

    /// False once stopped, or ended by its `duration_s`.
    fn running(&self) -> bool { self.thread.as_ref().is_some_and(|t| !t.is_finished()) }

    /// Stop (if still running) and return the statistics, as `ratelab emulate`'s emulator.json
    /// with `routes` per route; the same dict on every call.
    fn stop(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        if let Some(t) = self.thread.take() {
            self.stop.raise();
            let r = py.allow_threads(|| t.join()).map_err(|_| panic_err("emulator"))?.map_err(|_| panic_err("emulator"))?;
            self.stats = Some(to_py(py, &r.stats)?);
        }
        Ok(self.stats.as_ref().map(|s| s.clone_ref(py)).expect("set when the thread was joined"))
    }

    /// What happened since the last call: `packets`, a dict of numpy columns (route, arrival_s,
    /// size, queue_ms, delivered_s, ssrc, seq, pt, marker, timestamp; NaN / -1 where not
    /// applicable) plus `fate` (a list:
    /// "" delivered, "queue", "random", "overflow", "in_flight"), in the order fates were decided;
    /// `links`, the link series (t_s, link 0 forward / 1 reverse, capacity_kbps, queue_bytes,
    /// queue_ms); `discarded`, packet records dropped so far because nobody drained;
    /// `media_start_s`, when the first media datagram arrived (None before, or without
    /// `align_media_s`).
    fn drain_packets(&self, py: Python<'_>) -> PyResult<PyObject> {
        let (p, l, discarded) = self.recorder.drain();
        let d = PyDict::new_bound(py);
        let pk = PyDict::new_bound(py);
        pk.set_item("fate", p.fate.iter().map(|f| f.as_str()).collect::<Vec<_>>())?;
        pk.set_item("route", p.route.into_pyarray_bound(py))?;
        pk.set_item("arrival_s", p.arrival_s.into_pyarray_bound(py))?;
        pk.set_item("size", p.size.into_pyarray_bound(py))?;
        pk.set_item("queue_ms", p.queue_ms.into_pyarray_bound(py))?;
        pk.set_item("delivered_s", p.delivered_s.into_pyarray_bound(py))?;
        pk.set_item("ssrc", p.ssrc.into_pyarray_bound(py))?;
        pk.set_item("seq", p.seq.into_pyarray_bound(py))?;
        pk.set_item("pt", p.pt.into_pyarray_bound(py))?;
        pk.set_item("marker", p.marker.into_pyarray_bound(py))?;
        pk.set_item("timestamp", p.timestamp.into_pyarray_bound(py))?;
        let lk = PyDict::new_bound(py);
        lk.set_item("t_s", l.t_s.into_pyarray_bound(py))?;
        lk.set_item("link", l.link.into_pyarray_bound(py))?;
        lk.set_item("capacity_kbps", l.capacity_kbps.into_pyarray_bound(py))?;
        lk.set_item("queue_bytes", l.queue_bytes.into_pyarray_bound(py))?;
        lk.set_item("queue_ms", l.queue_ms.into_pyarray_bound(py))?;
        d.set_item("packets", pk)?;
        d.set_item("links", lk)?;
        d.set_item("discarded", discarded)?;
        d.set_item("media_start_s", self.recorder.media_start_s())?;
        Ok(d.into_any().unbind())
    }
}

impl Drop for EmulatorHandle {
    /// A handle dropped without `stop()` does not leave its thread relaying.
    fn drop(&mut self) {
        self.stop.raise();
        if let Some(t) = self.thread.take() { let _ = t.join(); }
    }
}
