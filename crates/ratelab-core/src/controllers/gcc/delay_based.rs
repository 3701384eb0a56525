//! Delay-based BWE (spec 2.1 step 5; libwebrtc `delay_based_bwe.cc`): inter-arrival grouping
//! (2.3) → trendline (2.4) → overuse detector (2.5) → AIMD (2.6), with the stream timeout of 2.3
//! and the decrease rate-limit / probe handling of 2.6.

use super::aimd::{AimdConfig, AimdRateControl};
use super::inter_arrival::{InterArrival, SEND_TIME_GROUP_LENGTH};
use super::trendline::{BandwidthUsage, Trendline};
use crate::controller::PacketResult;
use crate::units::{Bitrate, Duration, Time};

/// Spec 2.3 / 2.15: recreate the estimators after 2 s without feedback.
const STREAM_TIMEOUT: Duration = Duration::from_secs(2);

/// What one feedback did to the delay-based estimate.
#[derive(Clone, Copy, Debug, Default)]
pub struct DelayResult {
    pub updated: bool,
    /// The estimate was set from a probe result.
    pub probe: bool,
    pub target: Bitrate,
    /// The detector went Underusing → Normal during this feedback.
    pub recovered_from_overuse: bool,
    pub state: BandwidthUsage,
}

#[derive(Clone, Debug)]
pub struct DelayBasedBwe {
    window: usize,
    inter_arrival: InterArrival,
    trendline: Trendline,
    aimd: AimdRateControl,
    last_seen_packet: Option<Time>,
}

impl DelayBasedBwe {
    pub fn new(aimd: AimdConfig, trendline_window: usize) -> Self {
        DelayBasedBwe {
            window: trendline_window,
            inter_arrival: InterArrival::new(SEND_TIME_GROUP_LENGTH),
            trendline: Trendline::new(trendline_window),
            aimd: AimdRateControl::new(aimd),
            last_seen_packet: None,
        }
    }

    pub fn set_start_bitrate(&mut self, r: Bitrate) { self.aimd.set_start_bitrate(r); }
    pub fn set_min(&mut self, min: Bitrate) { self.aimd.set_min(min); }
    pub fn set_rtt(&mut self, rtt: Duration) { self.aimd.set_rtt(rtt); }
    pub fn last_estimate(&self) -> Bitrate { self.aimd.latest_estimate() }
    /// `LatestEstimate`: only once AIMD holds a valid estimate.
    pub fn latest_valid_estimate(&self) -> Option<Bitrate> { self.aimd.valid_estimate().then(|| self.aimd.latest_estimate()) }
    /// `GetExpectedBwePeriod` (AIMD's expected bandwidth period).
    pub fn expected_bwe_period(&self) -> Duration { self.aimd.expected_bandwidth_period() }
    pub fn state(&self) -> BandwidthUsage { self.trendline.state() }
    pub fn trendline(&self) -> &Trendline { &self.trendline }
    pub fn aimd(&self) -> &AimdRateControl { &self.aimd }

    /// One feedback. `packets` are the received packets sorted by arrival time.
    pub fn incoming(&mut self, packets: &[PacketResult], now: Time, acked: Option<Bitrate>, probe: Option<Bitrate>) -> DelayResult {
        let mut prev_state = self.trendline.state();
        let mut recovered = false;
        let mut any = false;
        for p in packets {
            let Some(recv) = p.recv_time else { continue };
            any = true;
            if self.last_seen_packet.is_none_or(|t| now - t > STREAM_TIMEOUT) {
                self.inter_arrival = InterArrival::new(SEND_TIME_GROUP_LENGTH);
                self.trendline = Trendline::new(self.window);
            }
            self.last_seen_packet = Some(now);
            let deltas = self.inter_arrival.compute_deltas(p.sent.send_time, recv, now, p.sent.size);
            if let Some(d) = deltas {
                // libwebrtc passes `receive_time.ms()`: whole milliseconds, rounded to nearest.
                let arrival_ms = (recv.as_us() + 500).div_euclid(1000) as f64;
                self.trendline.update(d.arrival_delta.as_ms_f64(), d.send_delta.as_ms_f64(), arrival_ms, true);
            }
            let s = self.trendline.state();
            if prev_state == BandwidthUsage::Underusing && s == BandwidthUsage::Normal {
                recovered = true;
            }
            prev_state = s;
        }
        if !any {
            // Only losses: no delay information (libwebrtc returns without an update).
            return DelayResult { state: self.trendline.state(), ..DelayResult::default() };
        }
        self.maybe_update_estimate(now, acked, probe, recovered)
    }

    fn maybe_update_estimate(&mut self, now: Time, acked: Option<Bitrate>, probe: Option<Bitrate>, recovered: bool) -> DelayResult {
        let state = self.trendline.state();
        let mut res = DelayResult { state, ..DelayResult::default() };
        if state == BandwidthUsage::Overusing {
            match acked {
                Some(a) if self.aimd.time_to_reduce_further(now, a) => {
                    res.target = self.aimd.update(state, Some(a), now);
                    res.updated = self.aimd.valid_estimate();
                }
                None if self.aimd.initial_time_to_reduce_further(now) => {
                    // Over-using before any acknowledged rate: halve (2.6).
                    let half = self.aimd.latest_estimate() / 2;
                    self.aimd.set_estimate(half, now);
                    res.target = self.aimd.latest_estimate();
                    res.updated = true;
                }
                _ => {}
            }
        } else if let Some(p) = probe {
            // A probe result (when not over-using) sets the estimate directly (2.6).
            self.aimd.set_estimate(p, now);
            res.target = self.aimd.latest_estimate();
            res.updated = true;
            res.probe = true;
        } else {
            res.target = self.aimd.update(state, acked, now);
            res.updated = self.aimd.valid_estimate();
            res.recovered_from_overuse = recovered;
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::SentPacket;
    use crate::units::Bytes;

    fn kbps(v: i64) -> Bitrate { Bitrate::from_kbps(v) }

    /// Packets every 5 ms for `n` feedbacks of 50 ms; each group's one-way delay grows by
    /// `growth_us` per packet.
    fn run(dbwe: &mut DelayBasedBwe, growth_us: i64, feedbacks: i64, acked: Bitrate) -> Vec<DelayResult> {
        let mut out = Vec::new();
        let mut seq = 0;
        for f in 0..feedbacks {
            let mut pk = Vec::new();
            for k in 0..10 {
                let i = f * 10 + k;
                let send = Time::from_us(i * 5000);
                let recv = send + Duration::from_ms(20) + Duration::from_us(growth_us * i);
                seq += 1;
                pk.push(PacketResult {
                    sent: SentPacket { seq, size: Bytes::new(1000), send_time: send, probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
                    recv_time: Some(recv),
                });
            }
            let now = Time::from_us(f * 50_000 + 50_000 + 20_000);
            out.push(dbwe.incoming(&pk, now, Some(acked), None));
        }
        out
    }

    #[test]
    fn growing_delay_decreases_to_085_of_acked() {
        let mut d = DelayBasedBwe::new(AimdConfig::default(), 20);
        d.set_min(kbps(30));
        d.set_start_bitrate(kbps(1000));
        let res = run(&mut d, 500, 30, kbps(800));
        assert!(res.iter().any(|r| r.state == BandwidthUsage::Overusing));
        // 0.85·800 − 5 = 675.
        assert!(res.iter().any(|r| r.updated && r.target == kbps(675)), "{:?}", res.iter().map(|r| r.target).collect::<Vec<_>>());
    }

    #[test]
    fn flat_delay_increases() {
        let mut d = DelayBasedBwe::new(AimdConfig::default(), 20);
        d.set_min(kbps(30));
        d.set_start_bitrate(kbps(1000));
        let res = run(&mut d, 0, 40, kbps(1000));
        assert!(res.iter().all(|r| r.state == BandwidthUsage::Normal));
        assert!(d.last_estimate() > kbps(1100), "{}", d.last_estimate());
    }

    #[test]
    fn probe_sets_estimate_and_only_losses_do_nothing() {
        let mut d = DelayBasedBwe::new(AimdConfig::default(), 20);
        d.set_min(kbps(30));
        d.set_start_bitrate(kbps(300));
        let p = PacketResult {
            sent: SentPacket { seq: 1, size: Bytes::new(1000), send_time: Time::from_ms(0), probe_cluster: None, is_padding: false, data_in_flight: Bytes::ZERO },
            recv_time: Some(Time::from_ms(20)),
        };
        let r = d.incoming(&[p], Time::from_ms(40), None, Some(kbps(1500)));
        assert!(r.updated && r.probe && r.target == kbps(1500));
        let lost = PacketResult { recv_time: None, ..p };
        let r = d.incoming(&[lost], Time::from_ms(90), None, None);
        assert!(!r.updated);
        assert_eq!(d.last_estimate(), kbps(1500));
    }
}
