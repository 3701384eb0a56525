//! The sender's scoreboard work behind `on_ack` / `on_timer`: marking segments lost and SACKed,
//! entering and leaving recovery, and building delivery-rate samples.

use super::*;

impl TcpSender {
    pub(super) fn uses_inflation(&self) -> bool { !self.sack && self.cc.wants_recovery_inflation() }

    pub(super) fn first_lost(&mut self) -> Option<u64> {
        if self.lost_count == 0 {
            return None;
        }
        let mut i = self.retx_hint.max(self.una_idx);
        while i < self.nxt_idx() {
            if self.seg(i).state == SegState::Lost {
                self.retx_hint = i;
                return Some(i);
            }
            i += 1;
        }
        None
    }

    pub(super) fn mark_lost(&mut self, idx: u64) -> i64 {
        let s = self.seg_mut(idx);
        if s.state != SegState::InFlight {
            return 0;
        }
        s.state = SegState::Lost;
        let len = s.len as i64;
        self.in_flight -= len;
        self.bytes_lost += len;
        self.lost_count += 1;
        self.retx_hint = self.retx_hint.min(idx);
        len
    }

    pub(super) fn unsack(&mut self, idx: u64) {
        let s = self.seg_mut(idx);
        if s.state != SegState::Sacked {
            return;
        }
        s.state = SegState::Lost;
        let len = s.len as i64;
        self.bytes_sacked -= len;
        self.bytes_lost += len;
        self.lost_count += 1;
        self.retx_hint = self.retx_hint.min(idx);
        if idx >= self.lost_ptr {
            self.sacked_from_ptr -= 1;
        }
    }

    /// SACK the segments inside `[lo, hi)`; returns the bytes newly delivered.
    pub(super) fn sack_range(&mut self, now: Time, lo: u64, hi: u64, rs: &mut RsBuild) -> i64 {
        let (first, last) = self.covered(lo, hi);
        let mut newly = 0;
        for idx in first..last {
            let s = *self.seg(idx);
            let len = s.len as i64;
            match s.state {
                SegState::Sacked => continue,
                SegState::InFlight => self.in_flight -= len,
                SegState::Lost => {
                    self.lost_count -= 1;
                    self.bytes_lost -= len;
                }
            }
            self.seg_mut(idx).state = SegState::Sacked;
            self.bytes_sacked += len;
            if idx >= self.lost_ptr {
                self.sacked_from_ptr += 1;
            }
            newly += len;
            self.rate_on_delivered(now, idx, &s, rs);
        }
        newly
    }

    /// Mark as lost every un-SACKed segment with at least `dupthresh` SACKed segments above it
    /// (RFC 6675 IsLost). Amortised O(1) per segment.
    pub(super) fn advance_loss_frontier(&mut self) -> i64 {
        let mut lost = 0;
        let thresh = self.dupthresh as u64;
        while self.lost_ptr < self.nxt_idx() {
            let s = *self.seg(self.lost_ptr);
            let here = (s.state == SegState::Sacked) as u64;
            if self.sacked_from_ptr - here < thresh {
                break;
            }
            // A retransmission is only lost if something sent after it got through.
            if s.state == SegState::InFlight && (!s.retransmitted || s.send_time < self.rack_send_time) {
                lost += self.mark_lost(self.lost_ptr);
            }
            self.sacked_from_ptr -= here;
            self.lost_ptr += 1;
        }
        lost
    }

    /// Returns `newly_lost` plus what entering recovery marked lost.
    pub(super) fn enter_recovery(&mut self, now: Time, mut newly_lost: i64) -> i64 {
        self.state = CaState::Recovery;
        self.recovery_point = self.snd_nxt();
        self.recover = self.recovery_point;
        self.recovery_start = now;
        self.partial_acks = 0;
        self.stats.fast_recoveries += 1;
        if self.seg(self.una_idx).state == SegState::InFlight && (!self.sack || self.lost_count == 0) {
            newly_lost += self.mark_lost(self.una_idx);
        }
        self.cc.on_congestion_event(&CongestionEvent {
            now,
            flight_size: self.flight_size(),
            in_flight: Bytes::new(self.in_flight),
            lost: Bytes::new(newly_lost),
        });
        self.inflation = if self.uses_inflation() { self.dupthresh as i64 * self.mss } else { 0 };
        self.force_retransmit = self.lost_count > 0;
        newly_lost
    }

    pub(super) fn exit_recovery(&mut self, now: Time) {
        self.state = CaState::Open;
        self.inflation = 0;
        self.partial_acks = 0;
        self.force_retransmit = false;
        self.cc.on_recovery_exit(now);
    }

    pub(super) fn rate_on_delivered(&mut self, now: Time, idx: u64, s: &SentSeg, rs: &mut RsBuild) {
        self.delivered += s.len as i64;
        self.delivered_time = now;
        self.rack_send_time = self.rack_send_time.max(s.send_time);
        let newest = !rs.has_data || s.send_time > self.first_sent_time || (s.send_time == self.first_sent_time && idx > rs.last_idx);
        if newest {
            rs.has_data = true;
            rs.prior_delivered = s.delivered;
            rs.is_app_limited = s.app_limited;
            rs.send_elapsed = s.send_time - s.first_sent_time;
            rs.ack_elapsed = now - s.delivered_time;
            rs.last_idx = idx;
            self.first_sent_time = s.send_time;
        }
    }

    pub(super) fn generate_rate_sample(&mut self, rs: &RsBuild) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if !rs.has_data {
            return None;
        }
        let interval = rs.send_elapsed.max(rs.ack_elapsed);
        if interval <= Duration::ZERO || self.rtt.min_rtt().is_some_and(|m| interval < m) {
            return None;
        }
        let delivered = Bytes::new(self.delivered - rs.prior_delivered);
        Some(RateSample {
            delivered,
            interval,
            delivery_rate: delivered / interval,
            is_app_limited: rs.is_app_limited,
            prior_delivered: Bytes::new(rs.prior_delivered),
        })
    }
}
