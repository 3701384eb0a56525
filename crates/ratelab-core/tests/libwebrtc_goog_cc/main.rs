//! libwebrtc goog_cc unit tests ported to ratelab: same inputs, same expectations, our own
//! code. The libwebrtc commit and the case-by-case table are in `docs/controllers/gcc.md`.
//! One module per libwebrtc test file; each test keeps libwebrtc's test name in snake case.

mod common;
mod acknowledged_bitrate_estimator;
mod aimd_rate_control;
mod alr_detector;
mod congestion_window_pushback;
mod delay_based_bwe;
mod goog_cc;
mod goog_cc_route;
mod inter_arrival;
mod probe_bitrate_estimator;
mod probe_controller;
mod robust_throughput;
mod send_side_bwe;
mod trendline;
