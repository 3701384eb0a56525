//! libwebrtc's loss protection logic (`modules/video_coding/media_opt_util.cc`,
//! `VCMLossProtectionLogic` with `VCMNackFecMethod`, as `FecControllerDefault` drives it): the
//! max-window loss filter and the hybrid NACK/FEC protection factors of delta and key frames.
//! Arithmetic follows libwebrtc's integer/float steps so that table look-ups land on the same
//! cells.

use super::rate_table::FEC_RATE_TABLE;
use crate::units::{Duration, Time};

/// `kLossPrHistorySize`: one-second slots in the max filter (window ≈ 10 s).
pub const LOSS_HISTORY: usize = 10;
/// `kLossPrShortFilterWinMs`.
pub const LOSS_SLOT: Duration = Duration::from_ms(1000);
/// `kLowRttNackMs`: below this RTT the hybrid method protects delta frames by NACK alone.
pub const LOW_RTT_NACK_MS: i64 = 20;
/// `kMaxRttTurnOffFec` (inside `BitRateTooLowForFec`).
pub const MAX_RTT_TURN_OFF_FEC_MS: i64 = 200;
/// `kUpperLimitFramesFec`.
pub const MAX_FRAMES_FEC: u32 = 6;
/// `kPacketLossMax`: the table's loss axis (0..=128 in 1/255); also the 50 % protection cap.
const PACKET_LOSS_MAX: u8 = 129;
/// `_maxPayloadSize` of `VCMProtectionMethod` (never changed from its default in libwebrtc).
const METHOD_MAX_PAYLOAD: f32 = 1460.0;

/// libwebrtc's max-window loss filter (`UpdateMaxLossHistory` / `MaxFilteredLossPr`): the
/// largest loss report of the current second and of up to ten earlier one-second slots.
#[derive(Clone, Debug)]
pub struct LossFilter {
    /// Newest first: (slot start, max loss of that slot).
    history: [Option<(Time, u8)>; LOSS_HISTORY],
    short_max: u8,
}

impl Default for LossFilter {
    fn default() -> Self { LossFilter { history: [None; LOSS_HISTORY], short_max: 0 } }
}

impl LossFilter {
    /// Feed the latest loss report (`loss255` = fraction × 256, saturated) at `now`; returns
    /// the max-filtered loss (`FilteredLoss(kMaxFilter)`).
    pub fn update(&mut self, now: Time, loss255: u8) -> u8 {
        match self.history[0] {
            Some((t, _)) if now - t < LOSS_SLOT => self.short_max = self.short_max.max(loss255),
            first => {
                if first.is_some() { self.history.rotate_right(1); } else { self.short_max = loss255; }
                if self.short_max == 0 { self.short_max = loss255; }
                self.history[0] = Some((now, self.short_max));
                self.short_max = 0;
            }
        }
        self.max(now)
    }

    fn max(&self, now: Time) -> u8 {
        let mut m = self.short_max;
        for (t, l) in self.history.iter().map_while(|h| *h) {
            if now - t > LOSS_SLOT * LOSS_HISTORY as i64 { break; }
            m = m.max(l);
        }
        m
    }
}

/// What the protection logic is given (`VCMProtectionParameters`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inputs {
    /// Filtered loss in 1/255.
    pub loss255: u8,
    /// Payload rate handed to `UpdateFecRates`, kbit/s.
    pub bitrate_kbps: f32,
    pub fps: f32,
    pub rtt_ms: i64,
    pub width: u32,
    pub height: u32,
    /// Exp-filtered packets per delta / key frame (negative: no frame yet).
    pub packets_per_frame: f32,
    pub packets_per_key_frame: f32,
}

/// Protection factors in the RTP module's terms (FEC packets per media packet, × 256).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Protection {
    pub delta: u8,
    pub key: u8,
    /// Frames one FEC block may span.
    pub max_frames: u32,
}

/// `BitsPerFrame`: kbit per frame, one temporal layer.
fn kbits_per_frame(p: &Inputs) -> i32 { (p.bitrate_kbps / p.fps.max(1.0)) as i32 }

/// `table[rate_index * 129 + loss]` with libwebrtc's index clamps.
fn table(rate_index: i32, loss: u8) -> u8 {
    let i = rate_index.clamp(0, 49) as usize * PACKET_LOSS_MAX as usize + loss as usize;
    FEC_RATE_TABLE[i.min(FEC_RATE_TABLE.len() - 1)]
}

/// `VCMFecMethod::ProtectionFactor`: (key, delta) code rates relative to all packets, in 1/255.
pub fn fec_code_rates(p: &Inputs) -> (u8, u8) {
    let loss_pr = (p.loss255 as f64 / 255.0) as f32;
    let mut loss = (255.0f32 * loss_pr) as u8;
    if loss == 0 { return (0, 0); }
    let first_partition = (255.0 * 0.20) as u8;
    let size_to_ref = (p.width * p.height) as f32 / (704.0 * 576.0);
    let resoln_fac = 1.0 / size_to_ref.powf(0.3);
    let bits = kbits_per_frame(p);
    let avg_tot_packets = (1.5 + bits as f32 * 1000.0 / (8.0 * METHOD_MAX_PAYLOAD)).clamp(0.0, 255.0) as u8;
    let eff = (resoln_fac * bits as f32).clamp(0.0, u16::MAX as f32) as u16 as i32;
    if loss >= PACKET_LOSS_MAX { loss = PACKET_LOSS_MAX - 1; }
    let mut delta = table((eff - 5) / 5, loss);
    if avg_tot_packets > 1 && delta < first_partition { delta = first_partition; }
    delta = delta.min(PACKET_LOSS_MAX - 1);
    // Key frames: a boosted rate index, at least twice the delta protection and the loss.
    let pf_delta = (0.5 + p.packets_per_frame).clamp(0.0, 255.0) as u8;
    let pf_key = (0.5 + p.packets_per_key_frame).clamp(0.0, 255.0) as u8;
    let ratio = if pf_delta > 0 { pf_key / pf_delta } else { 1 };
    let boost = ratio.max(2) as i32;
    let key_table = table(1 + (boost * eff - 5) / 5, loss);
    let boost_prot = ((2.0 * delta as f32) as i32).min(PACKET_LOSS_MAX as i32 - 1) as u8;
    let key = loss.max(boost_prot).max(key_table).min(PACKET_LOSS_MAX - 1);
    (key, delta)
}

/// `ConvertFECRate`: a share of all packets → FEC packets per media packet (× 255, rounded).
pub fn convert_fec_rate(code_rate: u8) -> u8 {
    (0.5 + 255.0 * code_rate as f64 / (255 - code_rate) as f64).min(255.0) as u8
}

/// `VCMNackFecMethod::UpdateParameters` (low RTT threshold `kLowRttNackMs`, no high one).
pub fn nack_fec_protection(p: &Inputs) -> Protection {
    let (mut key, mut delta) = fec_code_rates(p);
    if p.rtt_ms < LOW_RTT_NACK_MS { delta = 0; }
    let max_frames = ((2.0 * p.fps * p.rtt_ms as f32 / 1000.0 + 0.5) as i32).max(1).min(MAX_FRAMES_FEC as i32) as u32;
    if bitrate_too_low_for_fec(p) { key = 0; delta = 0; }
    Protection { delta: convert_fec_rate(delta), key: convert_fec_rate(key), max_frames }
}

/// `BitRateTooLowForFec`: no FEC below 400/700/1000 bytes per frame (CIF and below / up to
/// VGA / above) while the RTT is under 200 ms.
pub fn bitrate_too_low_for_fec(p: &Inputs) -> bool {
    let bytes_per_frame = 1000 * kbits_per_frame(p) / 8;
    let px = p.width * p.height;
    let max = if px <= 352 * 288 { 400 } else if px > 640 * 480 { 1000 } else { 700 };
    bytes_per_frame < max && p.rtt_ms < MAX_RTT_TURN_OFF_FEC_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(loss255: u8, kbps: f32) -> Inputs {
        Inputs { loss255, bitrate_kbps: kbps, fps: 15.0, rtt_ms: 100, width: 640, height: 360, packets_per_frame: 6.0, packets_per_key_frame: 30.0 }
    }

    #[test]
    fn max_filter_holds_the_largest_report_for_ten_slots() {
        let mut f = LossFilter::default();
        let ms = Time::from_ms;
        assert_eq!(f.update(ms(0), 0), 0);
        assert_eq!(f.update(ms(500), 40), 40, "the current second's max counts at once");
        assert_eq!(f.update(ms(1000), 0), 40);
        // From then on, zero reports: the 40 stays until ten newer one-second slots have
        // pushed its slot (started at 1000 ms) out of the history, at 11 s.
        let mut t = 1000;
        while t < 10_750 { t += 250; assert_eq!(f.update(ms(t), 0), 40, "at {t} ms"); }
        assert_eq!(f.update(ms(11_000), 0), 0);
    }

    #[test]
    fn max_filter_first_slot_takes_the_first_report() {
        let mut f = LossFilter::default();
        assert_eq!(f.update(Time::from_ms(0), 13), 13);
        assert_eq!(f.update(Time::from_ms(999), 3), 13);
        assert_eq!(f.update(Time::from_ms(2500), 5), 13);
    }

    /// libwebrtc's `ConvertFECRate` by hand: 255·p/(255−p) + 0.5.
    #[test]
    fn convert_fec_rate_by_hand() {
        assert_eq!(convert_fec_rate(0), 0);
        assert_eq!(convert_fec_rate(51), 64); // 63.75 + 0.5
        assert_eq!(convert_fec_rate(85), 128); // 127.5 + 0.5
        assert_eq!(convert_fec_rate(128), 255); // 257 → capped
    }

    /// 1 Mbit/s at 15 fps, 640×360: 66 kbit per frame, resolution factor (230400/405504)^−0.3
    /// = 1.1848, effective rate 78 → rate index (78−5)/5 = 14; table row 14.
    #[test]
    fn delta_and_key_rates_read_off_the_table() {
        for loss in [3u8, 13, 26] {
            let (key, delta) = fec_code_rates(&inputs(loss, 1000.0));
            let row = FEC_RATE_TABLE[14 * 129 + loss as usize];
            assert_eq!(delta, row.max(51), "loss {loss}: table or the 20 % first-partition floor");
            // key: ratio 30/6 = 5 → index 1 + (5·78−5)/5 = 78 → 49 (clamped)
            let key_row = FEC_RATE_TABLE[49 * 129 + loss as usize];
            assert_eq!(key, loss.max((2 * delta).min(128)).max(key_row).min(128));
        }
        assert_eq!(fec_code_rates(&inputs(0, 1000.0)), (0, 0));
    }

    #[test]
    fn hybrid_method_rtt_and_rate_rules() {
        let p = inputs(13, 1000.0);
        let (k, d) = fec_code_rates(&p);
        let prot = nack_fec_protection(&p);
        assert_eq!(prot, Protection { delta: convert_fec_rate(d), key: convert_fec_rate(k), max_frames: 3 }); // 2·15·0.1 + 0.5 = 3.5 → 3
        // Below 20 ms RTT: NACK alone for delta frames, key frames keep FEC.
        let low = nack_fec_protection(&Inputs { rtt_ms: 10, ..p });
        assert_eq!((low.delta, low.key, low.max_frames), (0, convert_fec_rate(k), 1));
        // 80 kbit/s at 15 fps = 5 kbit = 625 bytes per frame < 700 (VGA class) and RTT < 200 ms.
        assert!(bitrate_too_low_for_fec(&inputs(13, 80.0)));
        assert_eq!(nack_fec_protection(&inputs(13, 80.0)), Protection { delta: 0, key: 0, max_frames: 3 });
        // At 250 ms RTT the rate rule no longer applies; six frames at most (2·15·0.25 + 0.5 = 8).
        // 5 kbit per frame: rate index 0, whose row is 0 at loss 13, and fewer than two packets
        // per frame (1.5 + 5000/11680 → 1): no first-partition floor, so delta frames get none;
        // key frames get at least the loss, converted: 255·13/242 + 0.5 → 14.
        let far = nack_fec_protection(&Inputs { rtt_ms: 250, ..inputs(13, 80.0) });
        assert_eq!((far.delta, far.max_frames), (0, 6));
        assert!(far.key >= 14);
    }

    /// media_opt_util's key-frame boost: without delta-frame history the ratio is 2.
    #[test]
    fn key_boost_without_history() {
        let p = Inputs { packets_per_frame: -1.0, packets_per_key_frame: -1.0, ..inputs(26, 1000.0) };
        let (key, delta) = fec_code_rates(&p);
        let key_row = FEC_RATE_TABLE[((1 + (2 * 78 - 5) / 5) as usize).min(49) * 129 + 26];
        assert_eq!(key, 26u8.max((2 * delta).min(128)).max(key_row).min(128));
    }
}
