//! `media.fec`: libwebrtc's loss protection in a whole simulation, against what Chromium 156
//! did on the same kind of link (docs/fidelity.md, "First diagnosis" item 3): with 1 % and 5 %
//! random loss its encoder target was 71 % and 56 % of the transport estimate, the rest of the
//! media SSRC being FEC; loss-free about 90 % (headers only). Nothing here is tuned to those
//! numbers: the bounds check the direction and rough size of the effect.

use ratelab_core::scenario::Scenario;
use ratelab_core::sim::build_simulation;

struct Run { encoder_share: f64, fec_share: f64, freezes: u64, recovered: u64, frames: u64 }

/// gcc, 1 Mbit/s, 50 ms one way, random `loss`, 15 frames/s, 40 s, with FEC and/or NACK: the
/// finished simulation and its mean encoder output / target over 10-40 s.
fn simulate(loss: f64, fec: bool, nack: bool, seed: u64) -> (ratelab_core::sim::Simulation, f64) {
    let v = serde_json::json!({
        "name": "fec", "duration_s": 40,
        "link": {"capacity_kbps": 1000, "loss": loss},
        "flows": [{"kind": "media", "controller": "gcc", "one_way_delay_ms": 50, "media": {"fps": 15, "fec": fec, "nack": nack}}],
        "metrics": {"packet_log": false}
    });
    let sc = Scenario::from_json(&v.to_string()).expect("valid scenario");
    let mut sim = build_simulation(&sc, seed, None).unwrap();
    sim.run_to_end();
    let s = sim.take_series();
    let (mut enc, mut tgt) = (0.0, 0.0);
    for i in 0..s.len() {
        if s.t_s[i] >= 10.0 { enc += s.encoder_kbps[i]; tgt += s.target_kbps[i]; }
    }
    (sim, enc / tgt)
}

fn run(loss: f64, fec: bool, seed: u64) -> Run {
    let (sim, encoder_share) = simulate(loss, fec, false, seed);
    let fec_share = sim.media_sender(0).unwrap().fec().map_or(0.0, |f| f.fec_bytes.as_f64() / (f.fec_bytes + f.video_bytes).as_f64());
    let recovered = sim.media_receiver(0).unwrap().fec_recovered();
    let v = sim.summary().flows.remove(0);
    Run { encoder_share, fec_share, freezes: v.freeze_count.unwrap(), recovered, frames: v.frames_rendered.unwrap() }
}

#[test]
fn protection_takes_a_loss_dependent_share_and_recovers_frames() {
    for seed in 1..=3 {
        let clean = run(0.0, true, seed);
        let l1 = run(0.01, true, seed);
        let l5 = run(0.05, true, seed);
        let off5 = run(0.05, false, seed);
        eprintln!("seed {seed}: encoder/target clean {:.3} 1% {:.3} 5% {:.3} (off {:.3}); FEC share of video bytes 1% {:.3} 5% {:.3}; \
                   freezes 5% fec {} / off {}; frames {} / {}; recovered 1% {} 5% {}",
            clean.encoder_share, l1.encoder_share, l5.encoder_share, off5.encoder_share, l1.fec_share, l5.fec_share,
            l5.freezes, off5.freezes, l5.frames, off5.frames, l1.recovered, l5.recovered);
        // Loss-free: no FEC at all (the filtered loss is zero), headers only.
        assert_eq!(clean.fec_share, 0.0, "seed {seed}");
        assert!(clean.encoder_share > 0.85, "seed {seed}: {}", clean.encoder_share);
        // More loss, more protection, a smaller encoder share; capped at half.
        assert!(l1.fec_share > 0.05 && l5.fec_share > l1.fec_share && l5.fec_share <= 0.5, "seed {seed}");
        assert!(l5.encoder_share < l1.encoder_share && l1.encoder_share < clean.encoder_share, "seed {seed}");
        assert!(l5.encoder_share < off5.encoder_share - 0.1, "seed {seed}");
        // FEC gives back lost packets, and more frames are shown whole.
        assert!(l5.recovered > 0 && l1.recovered > 0, "seed {seed}");
        assert!(l5.frames > off5.frames, "seed {seed}");
        assert!(off5.fec_share == 0.0 && off5.recovered == 0);
    }
}

struct Hybrid { freezes: u64, frames: u64, recovered: u64, rtx_packets: u64, encoder_share: f64, given_up: u64, fec_kbps: f64 }

/// 5 % random loss with NACK and/or FEC.
fn run_protected(nack: bool, fec: bool, seed: u64) -> Hybrid {
    let (sim, encoder_share) = simulate(0.05, fec, nack, seed);
    let rx = sim.media_receiver(0).unwrap();
    let (recovered, given_up) = (rx.fec_recovered(), rx.nack_list().map_or(0, |n| n.given_up));
    let rtx_packets = sim.media_sender(0).unwrap().retransmitted().map_or(0, |(p, _)| p);
    let fec_kbps = sim.media_sender(0).unwrap().fec().map_or(0.0, |f| f.fec_bytes.as_f64() * 8.0 / 40.0 / 1e3);
    let f = sim.summary().flows.remove(0);
    Hybrid { freezes: f.freeze_count.unwrap(), frames: f.frames_rendered.unwrap(), recovered, rtx_packets, encoder_share, given_up, fec_kbps }
}

/// Both on, as Chromium sends: FEC repairs part of the losses, so fewer retransmissions go out
/// and fewer frames freeze than with NACK alone, in every seed. Against FEC alone the two are
/// within seed noise (0-4 freezes a seed): over 12 seeds 16 vs 19 before the protection was
/// refreshed once a second, 17 vs 13 after (round 11), so that comparison is printed, not
/// asserted. (That retransmissions count into the protection overhead is a unit test of
/// `FecSender`.)
#[test]
fn nack_and_fec_together_share_the_repairs() {
    for seed in 1..=3 {
        let both = run_protected(true, true, seed);
        let nack = run_protected(true, false, seed);
        let fec = run_protected(false, true, seed);
        eprintln!("seed {seed}: freezes both {} nack {} fec {}; frames {} / {} / {}; recovered both {} fec {}; rtx both {} nack {}; \
                   encoder/target both {:.3} fec {:.3}; given up both {} nack {}; FEC kbit/s both {:.0} fec {:.0}",
            both.freezes, nack.freezes, fec.freezes, both.frames, nack.frames, fec.frames, both.recovered, fec.recovered,
            both.rtx_packets, nack.rtx_packets, both.encoder_share, fec.encoder_share, both.given_up, nack.given_up, both.fec_kbps, fec.fec_kbps);
        assert!(both.recovered > 0 && both.rtx_packets > 0, "seed {seed}");
        assert!(both.rtx_packets < nack.rtx_packets, "seed {seed}: FEC repairs leave the NACK list");
        assert!(both.freezes < nack.freezes, "seed {seed}");
        assert!(both.frames > nack.frames, "seed {seed}");
    }
}

/// A controller whose target never moves (`fixed`) still has its FEC follow the loss: goog_cc
/// sends an update whenever the reported loss fraction changes, so the protection is refreshed
/// on each loss report, not only when the rate changes.
#[test]
fn protection_follows_loss_reports_without_rate_updates() {
    let v = serde_json::json!({
        "name": "fec-fixed", "duration_s": 20,
        "link": {"capacity_kbps": 1000, "loss": 0.05},
        "flows": [{"kind": "media", "controller": "fixed", "params": {"rate_kbps": 600.0}, "one_way_delay_ms": 50, "media": {"fps": 15, "fec": true}}],
        "metrics": {"packet_log": false}
    });
    let sc = Scenario::from_json(&v.to_string()).expect("valid scenario");
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    sim.run_to_end();
    let fec = sim.media_sender(0).unwrap().fec().unwrap();
    let share = fec.fec_bytes.as_f64() / (fec.fec_bytes + fec.video_bytes).as_f64();
    eprintln!("fixed 600 kbit/s at 5 % loss: FEC share of video bytes {share:.3}, protection {:?}", fec.protection());
    assert!(share > 0.1 && share <= 0.5, "FEC share {share}");
}

/// At a few packets a second a loss report (20 packets) comes only every few seconds, yet
/// goog_cc reports the network on each RTCP receiver report (its RTT moved), about once a
/// second: the FEC share the encoder is denied is never more than about a second old.
#[test]
fn protection_is_refreshed_about_once_a_second_at_low_packet_rates() {
    let v = serde_json::json!({
        "name": "fec-sparse", "duration_s": 20,
        "link": {"capacity_kbps": 1000, "loss": 0.05},
        "flows": [{"kind": "media", "controller": "fixed", "params": {"rate_kbps": 30.0}, "one_way_delay_ms": 50,
                   "media": {"fps": 5, "fec": true, "min_kbps": 20}}],
        "metrics": {"packet_log": false}
    });
    let sc = Scenario::from_json(&v.to_string()).expect("valid scenario");
    let mut sim = build_simulation(&sc, 1, None).unwrap();
    let mut oldest = 0.0f64;
    for step in 1..=200 {
        let now = ratelab_core::units::Time::from_ms(step * 100);
        sim.run_until(now);
        let fec = sim.media_sender(0).unwrap().fec().unwrap();
        if step >= 30 {
            let at = fec.updated_at().expect("updated by 3 s");
            oldest = oldest.max((now - at).as_secs_f64());
        }
    }
    eprintln!("30 kbit/s at 5 frames/s: protection at most {oldest:.2} s old");
    assert!(oldest <= 1.3, "protection {oldest:.2} s old");
}
