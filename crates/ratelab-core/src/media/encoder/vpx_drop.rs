//! libvpx VP8's frame dropping in one-pass CBR, as libwebrtc's `LibvpxVp8Encoder` configures
//! it (`rc_dropframe_thresh` 30, `rc_buf_optimal_sz` 600 ms; libvpx vp8/encoder/onyx_if.c
//! `vp8_check_drop_buffer` and ratectrl.c `calc_pframe_target_size`, compared at libvpx
//! 0cfc6da3). Two rules, both on the rate control's buffer level (the bits the encoder is
//! under its budget, optimal 600 ms of the target):
//! * *decimation*: below 2/3 of the drop mark (the mark is 30 % of the optimal level) the
//!   encoder keeps one frame of every 2, below 1/4 of it one of every 3, below 1/8 one of
//!   every 4, and steps back one rung at a time once the level is above the mark again; the
//!   kept frames get 3/2 (one of 2) or 5/4 (one of 3 or 4) of the per-frame budget;
//! * *underrun*: while the level is below zero every delta frame is dropped.
//!
//! Dropped frames refill the buffer by one frame's budget; key frames are never dropped. The
//! pattern this makes (frame intervals of 2, 3 and 4, then runs of 6-8 when the floor
//! outgrows even one frame in 4) is what Chromium's VP8 shows on the fidelity study's
//! low-rate traces, where a single drop threshold made uniform intervals of 4-5
//! (docs/fidelity.md, round 11).

/// `rc_buf_optimal_sz`: the level the rate control aims at, seconds of the target.
pub const OPTIMAL_LEVEL_S: f64 = 0.6;
/// `rc_dropframe_thresh` (percent of the optimal level): the drop mark.
const DROP_MARK_S: f64 = 0.30 * OPTIMAL_LEVEL_S;

/// What the rate control does with the frame captured now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// Encode it, aiming at this multiple of the per-frame budget.
    Encode { budget_factor: f64 },
    /// Drop it: decimation's regular pattern.
    Decimate,
    /// Drop it: the buffer is below zero.
    Underrun,
}

#[derive(Clone, Debug, Default)]
pub struct VpxDrop {
    /// Keep one frame of every `factor + 1` (0: keep all).
    factor: u32,
    /// Frames still to drop before the next kept one.
    count: u32,
}

impl VpxDrop {
    pub fn new() -> Self { Self::default() }

    /// The decision for a frame when the buffer level is `level_s` seconds of the target.
    pub fn decide(&mut self, level_s: f64, keyframe: bool) -> Decision {
        let (mark75, mark50, mark25) = (DROP_MARK_S * 2.0 / 3.0, DROP_MARK_S / 4.0, DROP_MARK_S / 8.0);
        if level_s > DROP_MARK_S && self.factor > 0 { self.factor -= 1; }
        if level_s > mark75 && self.factor > 0 {
            self.factor = 1;
        } else if level_s < mark25 && (self.factor == 2 || self.factor == 3) {
            self.factor = 3;
        } else if level_s < mark50 && (self.factor == 1 || self.factor == 2) {
            self.factor = 2;
        } else if level_s < mark75 && self.factor <= 1 {
            self.factor = 1;
        }
        let budget_factor = match self.factor {
            0 => 1.0,
            1 => 1.5,
            _ => 1.25,
        };
        if self.factor == 0 {
            self.count = 0;
        } else if keyframe {
            self.count = self.factor;
        } else if self.count > 0 {
            self.count -= 1;
            return Decision::Decimate;
        } else {
            self.count = self.factor;
        }
        if !keyframe && level_s < 0.0 { return Decision::Underrun; }
        Decision::Encode { budget_factor }
    }

    /// One frame kept of every this many (1: no decimation).
    pub fn keep_one_in(&self) -> u32 { self.factor + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(d: Decision) -> bool { matches!(d, Decision::Encode { .. }) }

    #[test]
    fn above_two_thirds_of_the_mark_nothing_is_dropped() {
        // mark 0.18 s, 2/3 of it 0.12 s
        let mut v = VpxDrop::new();
        for _ in 0..100 { assert_eq!(v.decide(0.121, false), Decision::Encode { budget_factor: 1.0 }); }
        assert_eq!(v.keep_one_in(), 1);
    }

    #[test]
    fn the_ladder_keeps_one_in_two_three_four() {
        let pattern = |v: &mut VpxDrop, level: f64| (0..12).map(|_| kept(v.decide(level, false))).collect::<Vec<_>>();
        let mut v = VpxDrop::new();
        // 0.10 s: under 0.12, one in 2 (the first frame sets the count and is kept)
        assert_eq!(pattern(&mut v, 0.10), [true, false].repeat(6));
        assert_eq!(v.decide(0.10, false), Decision::Encode { budget_factor: 1.5 });
        // 0.04 s: under 0.045, one in 3
        let mut v = VpxDrop::new();
        v.decide(0.10, false);
        v.decide(0.10, false);
        assert_eq!(pattern(&mut v, 0.04), [true, false, false].repeat(4));
        assert_eq!(v.keep_one_in(), 3);
        // 0.02 s: under 0.0225, one in 4 (the rungs are climbed one frame at a time)
        v.decide(0.02, false);
        assert_eq!(v.keep_one_in(), 4);
        let p = pattern(&mut v, 0.02);
        assert_eq!(p.iter().filter(|k| **k).count(), 3, "{p:?}");
        // a fresh encoder does not skip rungs: 0.02 s from factor 0 is one in 2
        let mut v = VpxDrop::new();
        v.decide(0.02, false);
        assert_eq!(v.keep_one_in(), 2);
    }

    #[test]
    fn above_the_mark_the_factor_steps_back() {
        let mut v = VpxDrop::new();
        v.decide(0.10, false);
        v.decide(0.04, false);
        v.decide(0.02, false);
        assert_eq!(v.keep_one_in(), 4);
        // above 0.18: one rung down, then "above 0.12 with a factor" pins it to one in 2
        v.decide(0.2, false);
        assert_eq!(v.keep_one_in(), 2);
        v.decide(0.2, false);
        assert_eq!(v.keep_one_in(), 1);
        // between 0.12 and 0.18 a factor of 1 stays
        v.decide(0.10, false);
        v.decide(0.15, false);
        assert_eq!(v.keep_one_in(), 2);
    }

    #[test]
    fn below_zero_every_delta_frame_is_dropped_but_not_a_key_frame() {
        let mut v = VpxDrop::new();
        let d: Vec<_> = (0..6).map(|_| v.decide(-0.01, false)).collect();
        // factor 1 from the first frame: kept by decimation, dropped by the underrun rule
        assert_eq!(d[0], Decision::Underrun);
        assert!(d.iter().all(|d| !kept(*d)));
        assert!(kept(v.decide(-0.5, true)));
    }
}
