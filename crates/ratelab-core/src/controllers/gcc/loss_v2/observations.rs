//! Observations (libwebrtc `PushBackObservation` and the loss averages built on them): feedback
//! is accumulated into a partial observation until it spans at least
//! `observation_duration_lower_bound` of send time, then closed into the window of the
//! `observation_window_size` newest observations. Sizes are whole bytes and rates whole bit/s,
//! with libwebrtc's rounding, so that the ported unit tests see the same numbers.

use super::{mul, LossBasedBweV2};
use crate::controller::PacketResult;
use crate::units::{Bitrate, Bytes, Time};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Observation {
    /// Sequence number of the observation; `None` = slot unused.
    pub id: Option<u64>,
    pub num_packets: u64,
    pub num_lost_packets: u64,
    pub sending_rate: Bitrate,
    pub size: Bytes,
    pub lost_size: Bytes,
}

impl Observation {
    pub fn num_received_packets(&self) -> u64 { self.num_packets - self.num_lost_packets }
}

/// Feedback not yet closed into an observation.
#[derive(Clone, Debug, Default)]
pub(super) struct PartialObservation {
    num_packets: u64,
    /// Packets reported lost, by transport sequence number; a later report of the same packet
    /// as received removes it (reordering across feedback messages is not loss).
    lost_packets: BTreeMap<u64, Bytes>,
    size: Bytes,
}

impl LossBasedBweV2 {
    /// Accumulate `packets`; returns true if an observation was closed.
    pub(super) fn push_back_observation(&mut self, packets: &[PacketResult]) -> bool {
        if packets.is_empty() {
            return false;
        }
        let partial = &mut self.partial;
        partial.num_packets += packets.len() as u64;
        let mut first_send = Time::MAX;
        let mut last_send = Time::ZERO;
        for (i, p) in packets.iter().enumerate() {
            if p.received() {
                partial.lost_packets.remove(&p.sent.seq);
            } else {
                partial.lost_packets.entry(p.sent.seq).or_insert(p.sent.size);
            }
            partial.size += p.sent.size;
            last_send = if i == 0 { p.sent.send_time } else { last_send.max(p.sent.send_time) };
            first_send = first_send.min(p.sent.send_time);
        }
        // The first feedback only anchors the window at its earliest send time.
        let prev = *self.last_send_time_most_recent_observation.get_or_insert(first_send);
        let duration = last_send - prev;
        if duration <= crate::units::Duration::ZERO || duration < self.cfg.observation_duration_lower_bound {
            return false;
        }
        self.last_send_time_most_recent_observation = Some(last_send);

        let partial = std::mem::take(&mut self.partial);
        let instantaneous = partial.size / duration;
        let id = self.num_observations;
        let observation = Observation {
            id: Some(id),
            num_packets: partial.num_packets,
            num_lost_packets: partial.lost_packets.len() as u64,
            sending_rate: self.smoothed_sending_rate(instantaneous),
            size: partial.size,
            lost_size: partial.lost_packets.values().copied().sum(),
        };
        self.num_observations += 1;
        let slot = (id % self.observations.len() as u64) as usize;
        self.observations[slot] = observation;
        self.average_reported_loss_ratio = self.calculate_average_reported_loss_ratio();
        self.calculate_instant_upper_bound();
        true
    }

    /// `GetSendingRate`: exponential smoothing with the newest observation's rate.
    fn smoothed_sending_rate(&self, instantaneous: Bitrate) -> Bitrate {
        if self.num_observations == 0 {
            return instantaneous;
        }
        let newest = (self.num_observations - 1) % self.observations.len() as u64;
        let previous = self.observations[newest as usize].sending_rate;
        let a = self.cfg.sending_rate_smoothing_factor;
        mul(previous, a) + mul(instantaneous, 1.0 - a)
    }

    /// Initialized observations with their age (0 = newest).
    pub(super) fn initialized_observations(&self) -> impl Iterator<Item = (usize, &Observation)> {
        let n = self.num_observations;
        self.observations.iter().filter_map(move |o| o.id.map(|id| ((n - 1 - id) as usize, o)))
    }

    pub(super) fn calculate_average_reported_loss_ratio(&self) -> f64 {
        if self.num_observations == 0 {
            return 0.0;
        }
        if self.cfg.use_byte_loss_rate { self.average_byte_loss_ratio() } else { self.average_packet_loss_ratio() }
    }

    fn average_packet_loss_ratio(&self) -> f64 {
        let (mut packets, mut lost) = (0.0, 0.0);
        for (age, o) in self.initialized_observations() {
            let w = self.instant_upper_bound_temporal_weights[age];
            packets += w * o.num_packets as f64;
            lost += w * o.num_lost_packets as f64;
        }
        if packets > 0.0 { lost / packets } else { 0.0 }
    }

    /// Weighted byte loss over the window; with more than 3 observations the ones with the
    /// lowest and highest loss are left out (a loss spike), unless the worst one was sent at
    /// ≥ `median_sending_rate_factor` × the median send rate (a send burst).
    fn average_byte_loss_ratio(&self) -> f64 {
        let (mut total, mut lost) = (Bytes::ZERO, Bytes::ZERO);
        let (mut min_ratio, mut max_ratio) = (1.0, 0.0);
        let (mut min_lost, mut max_lost, mut min_bytes, mut max_bytes) = (Bytes::ZERO, Bytes::ZERO, Bytes::ZERO, Bytes::ZERO);
        let mut send_rate_of_max = Bitrate::ZERO;
        for (age, o) in self.initialized_observations() {
            let w = self.instant_upper_bound_temporal_weights[age];
            total += o.size * w;
            lost += o.lost_size * w;
            let ratio = if o.size > Bytes::ZERO { o.lost_size / o.size } else { 0.0 };
            if self.num_observations > 3 {
                if ratio > max_ratio {
                    max_ratio = ratio;
                    max_lost = o.lost_size * w;
                    max_bytes = o.size * w;
                    send_rate_of_max = o.sending_rate;
                }
                if ratio < min_ratio {
                    min_ratio = ratio;
                    min_lost = o.lost_size * w;
                    min_bytes = o.size * w;
                }
            }
        }
        if total <= Bytes::ZERO {
            // libwebrtc divides 0 by 0 here; no observation without bytes reaches this.
            return 0.0;
        }
        if mul(self.median_sending_rate(), self.cfg.median_sending_rate_factor) <= send_rate_of_max || total == max_bytes + min_bytes {
            return lost / total;
        }
        (lost - min_lost - max_lost) / (total - max_bytes - min_bytes)
    }

    fn median_sending_rate(&self) -> Bitrate {
        let mut rates: Vec<Bitrate> = self
            .initialized_observations()
            .map(|(_, o)| o.sending_rate)
            .filter(|r| r.is_finite() && !r.is_zero())
            .collect();
        if rates.is_empty() {
            return Bitrate::ZERO;
        }
        rates.sort_unstable();
        let n = rates.len();
        if n.is_multiple_of(2) { (rates[n / 2 - 1] + rates[n / 2]) / 2 } else { rates[n / 2] }
    }

    /// `balance / (average loss − offset)` above the offset, else the max bitrate.
    pub(super) fn calculate_instant_upper_bound(&mut self) {
        let l = self.average_reported_loss_ratio;
        let offset = self.cfg.instant_upper_bound_loss_offset;
        let limit = if l > offset {
            Bitrate::from_bps_f64(self.cfg.instant_upper_bound_bandwidth_balance.bps_f64() / (l - offset))
        } else {
            self.max_bitrate
        };
        self.cached_instant_upper_bound = Some(limit);
    }

    pub(super) fn instant_upper_bound(&self) -> Bitrate { self.cached_instant_upper_bound.unwrap_or(self.max_bitrate) }

    /// `max(lower_bound_by_acked_rate_factor × acked rate, min bitrate)`.
    pub(super) fn calculate_instant_lower_bound(&mut self) {
        let mut lower = Bitrate::ZERO;
        if let Some(acked) = self.acked_bitrate {
            if self.cfg.lower_bound_by_acked_rate_factor > 0.0 {
                lower = mul(acked, self.cfg.lower_bound_by_acked_rate_factor);
            }
        }
        if self.min_bitrate.is_finite() {
            lower = lower.max(self.min_bitrate);
        }
        self.cached_instant_lower_bound = Some(lower);
    }

    pub(super) fn instant_lower_bound(&self) -> Bitrate { self.cached_instant_lower_bound.unwrap_or(Bitrate::ZERO) }
}
