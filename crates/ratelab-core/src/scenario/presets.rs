//! Sender presets (`media.preset`): one word for a set of media settings. A preset only fills
//! the keys a flow's `media` table leaves out, so any of them can still be set by hand.
//!
//! `"chromium"` is the sender the fidelity study calibrated against Chromium 156's libwebrtc
//! (docs/fidelity.md, rounds 2-9: each value below says where it comes from). It was measured
//! with a high-motion 640x360 source at 15 frames/s; the frame floor scales with the flow's
//! resolution as the encoder model does.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::media::encoder::floor::FLOOR_PIXEL_EXPONENT;

/// The named sender presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SenderPreset {
    /// Chromium 156's video sender as the fidelity study calibrated it.
    Chromium,
}

/// Today's libwebrtc pacer: media leaves back to back while its debt is below 40 ms of sending
/// (`kDefaultBurstInterval`).
const CHROMIUM_PACER_BURST_MS: f64 = 40.0;
/// libwebrtc's VP8 key-frame interval is 3000 frames (`keyFrameInterval`), not seconds.
const CHROMIUM_KEYFRAME_INTERVAL_FRAMES: f64 = 3000.0;
/// A VP8 key frame of the study's source is about twice the delta frames before it (round 9:
/// median 2.0 over the 18 key frames after the first in the 14 calls of 2026-11-29, each at a
/// resolution step up or down; 1.4-3.2× but for two steps down to 320x180, 0.5× and 0.9× the
/// larger frames before them).
const CHROMIUM_KEYFRAME_FACTOR: f64 = 2.0;
/// Measured on Chromium's packets: IP + UDP + SRTP + RTP with its extensions.
const CHROMIUM_HEADER_BYTES: u32 = 64;
/// Chromium's largest video packet on the wire (IP + UDP + SRTP), measured in every packet
/// record of the study (round 9): its packetizer keeps each packet to this, so the payload
/// per packet is this less the header.
const CHROMIUM_MAX_WIRE_BYTES: u32 = 1170;
/// The SRTP authentication tag Chromium's calls negotiate (`SRTP_AES128_CM_HMAC_SHA1_80`, in
/// getStats' `transport.srtpCipher`): 80 bits, appended after libwebrtc has recorded the
/// packet's size for the bandwidth estimator, so the estimator never counts it (round 9).
const CHROMIUM_SRTP_TAG_BYTES: u32 = 10;
/// libwebrtc records a packet's send time for transport feedback in whole milliseconds
/// (`SentPacketInfo::send_time_ms`), which is what its inter-arrival grouping sees (round 10).
const CHROMIUM_SEND_TIME_RESOLUTION_MS: f64 = 1.0;
/// The median time between consecutive packets of a burst in the train calls' packet records
/// (round 10: wired-900k 36 µs in each of 3 calls, fcc-8996 44, wired-200k 82; 38 pooled): the
/// host's cost per packet, which decides how often a burst straddles a millisecond.
const CHROMIUM_BURST_SPACING_US: f64 = 38.0;
/// The per-packet overhead libwebrtc expects (`ExpectedPerPacketOverhead`); fitted on the
/// train trace wired-900k (round 4).
const CHROMIUM_EXPECTED_OVERHEAD_BYTES: f64 = 90.0;
/// libwebrtc's video minimum: the encoder goes down to it while the estimate stays higher.
const CHROMIUM_ENCODER_MIN_KBPS: f64 = 30.0;
/// The smallest VP8 delta frame of the study's source at 640x360 (round 3 evidence).
const CHROMIUM_FRAME_FLOOR_KBIT_640X360: f64 = 27.0;

impl SenderPreset {
    /// The settings this preset stands for, given the flow's own `media` table (its `fps`,
    /// `width` and `height` when set, else the defaults).
    pub fn settings(self, media: &Map<String, Value>) -> Map<String, Value> {
        let defaults = super::MediaConfig::default();
        let num = |k: &str, d: f64| media.get(k).and_then(Value::as_f64).unwrap_or(d);
        match self {
            SenderPreset::Chromium => {
                let fps = num("fps", defaults.fps).max(1e-3);
                let pixels = num("width", defaults.width as f64) * num("height", defaults.height as f64);
                let floor = CHROMIUM_FRAME_FLOOR_KBIT_640X360 * (pixels / (640.0 * 360.0)).powf(FLOOR_PIXEL_EXPONENT);
                // A header typed by hand keeps the wire packet at Chromium's size (a header too
                // large for that leaves the schema's smallest payload, 100 bytes).
                let header = media.get("header_bytes").and_then(Value::as_u64).unwrap_or(u64::from(CHROMIUM_HEADER_BYTES));
                let max_payload = u64::from(CHROMIUM_MAX_WIRE_BYTES).saturating_sub(header).max(100);
                let v = json!({
                    "pacer_burst_ms": CHROMIUM_PACER_BURST_MS,
                    "keyframe_interval_s": CHROMIUM_KEYFRAME_INTERVAL_FRAMES / fps,
                    "keyframe_factor": CHROMIUM_KEYFRAME_FACTOR,
                    "header_bytes": CHROMIUM_HEADER_BYTES,
                    "max_payload_bytes": max_payload,
                    "srtp_tag_bytes": CHROMIUM_SRTP_TAG_BYTES,
                    "send_time_resolution_ms": CHROMIUM_SEND_TIME_RESOLUTION_MS,
                    "burst_spacing_us": CHROMIUM_BURST_SPACING_US,
                    "overhead_accounting": true,
                    "expected_overhead_bytes": CHROMIUM_EXPECTED_OVERHEAD_BYTES,
                    "fec": true,
                    "nack": true,
                    "encoder_min_kbps": CHROMIUM_ENCODER_MIN_KBPS,
                    "frame_floor_kbit": floor,
                    "quality_scaler": true,
                    // On by default in today's libwebrtc (`RateControlSettings`); round 7.
                    "bitrate_adjuster": true,
                });
                match v { Value::Object(m) => m, _ => unreachable!() }
            }
        }
    }
}

/// Fill every flow's `media` table from its `preset` (the keys it leaves out). An unknown
/// preset name is left for the schema to reject, with the field's path.
pub fn expand(doc: &mut Value) {
    let Some(flows) = doc.get_mut("flows").and_then(Value::as_array_mut) else { return };
    for flow in flows {
        let Some(media) = flow.get_mut("media").and_then(Value::as_object_mut) else { continue };
        let Some(preset) = media.get("preset").cloned().and_then(|p| serde_json::from_value::<SenderPreset>(p).ok()) else { continue };
        for (k, v) in preset.settings(media) {
            media.entry(k).or_insert(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media_of(v: &Value) -> &Map<String, Value> { v["flows"][0]["media"].as_object().unwrap() }

    #[test]
    fn chromium_fills_what_the_flow_leaves_out() {
        let mut doc = json!({"flows": [{"media": {"preset": "chromium", "fps": 15, "nack": false}}]});
        expand(&mut doc);
        let m = media_of(&doc);
        assert_eq!(m["keyframe_interval_s"], json!(200.0), "3000 frames at 15 frames/s");
        assert_eq!(m["keyframe_factor"], json!(2.0));
        assert_eq!(m["nack"], json!(false), "a key set by hand stays");
        assert_eq!(m["fec"], json!(true));
        assert_eq!(m["frame_floor_kbit"], json!(27.0));
        assert_eq!(m["expected_overhead_bytes"], json!(90.0));
        assert_eq!(m["bitrate_adjuster"], json!(true));
        // 1170 bytes on the wire less the 64-byte header; the 10-byte tag is not counted.
        assert_eq!((m["max_payload_bytes"].clone(), m["srtp_tag_bytes"].clone()), (json!(1106), json!(10)));
        assert_eq!((m["send_time_resolution_ms"].clone(), m["burst_spacing_us"].clone()), (json!(1.0), json!(38.0)));
    }

    #[test]
    fn the_floor_follows_the_resolution_and_the_interval_the_default_fps() {
        let mut doc = json!({"flows": [{"media": {"preset": "chromium", "width": 1280, "height": 720}}]});
        expand(&mut doc);
        let m = media_of(&doc);
        // 4x the pixels: 27 × 4^0.62 = 63.4 kbit; 3000 frames at the default 30 frames/s.
        assert!((m["frame_floor_kbit"].as_f64().unwrap() - 27.0 * 4f64.powf(0.62)).abs() < 1e-9);
        assert_eq!(m["keyframe_interval_s"], json!(100.0));
    }

    #[test]
    fn flows_without_a_preset_are_untouched() {
        let mut doc = json!({"flows": [{"media": {"fps": 15}}, {"kind": "tcp"}, {"media": {"preset": "firefox"}}]});
        let before = doc.clone();
        expand(&mut doc);
        assert_eq!(doc, before);
    }
}
