//! Route changes (handovers, `[[route_changes]]`): at its time a link becomes the new route's
//! link, the flows' path delays follow the new link's `delay_ms`, and the told senders get
//! [`crate::controller::Controller::on_route_change`] with their constraints.
//!
//! What happens to packets: those waiting in the old route's queue (and the one in service)
//! are lost (`queued = "drop"`, default: the old interface is gone) or wait for the new route
//! (`"carry"`; the one in service finishes at the old rate). Packets already past the queue
//! arrive with the delay they left with, so a shorter new path lets new packets overtake them,
//! as on a real handover. Feedback already on its way is not touched. Nothing here draws a
//! random number; the new link's loss draws from the run's link RNG as the old one did.

use super::{Event, FlowState, Simulation};
use crate::network::capacity::CapacitySchedule;
use crate::network::link::Link;
use crate::scenario::{Direction, Scenario};
use crate::units::{Duration, Time};

/// One route change, its link built ahead of time (errors surface when the run is built).
pub(super) struct RouteChange {
    pub(super) at: Time,
    pub(super) dir: Direction,
    /// The new link (steps and trace from time 0; [`Link::reroute`] starts them at `at`).
    pub(super) link: Option<Link>,
    /// The new link's own one-way delay (`delay_ms`).
    pub(super) delay: Duration,
    /// Flow ids whose senders are told.
    pub(super) told: Vec<u32>,
    pub(super) carry: bool,
}

/// The route changes of a run and the link delays in effect.
#[derive(Default)]
pub(super) struct Routes {
    pub(super) changes: Vec<RouteChange>,
    /// `delay_ms` of the link in effect, by direction.
    pub(super) link_delay: [Duration; 2],
    /// Each link's capacity over the run, by direction: `(from, schedule)`, the scenario's
    /// from 0, then each route change's (for the summary and the oracle's fair share).
    pub(super) capacities: Vec<Vec<(Time, CapacitySchedule)>>,
}

impl Routes {
    /// The link delays of the scenario; route changes are added by the builder.
    pub(super) fn new(sc: &Scenario) -> Self {
        let d = |ms: f64| Duration::from_ms_f64(ms);
        Routes { changes: Vec::new(), link_delay: [d(sc.link.delay_ms), sc.reverse_link.as_ref().map_or(Duration::ZERO, |l| d(l.delay_ms))], capacities: Vec::new() }
    }
}

impl Simulation {
    /// Schedule every route change (called once by the builder).
    pub(super) fn schedule_route_changes(&mut self) {
        for (i, rc) in self.routes.changes.iter().enumerate() {
            self.events.push(rc.at, Event::RouteChange(i));
        }
    }

    pub(super) fn on_route_change(&mut self, i: usize) {
        let now = self.now;
        let rc = &mut self.routes.changes[i];
        let Some(link) = rc.link.take() else { return };
        let (dir, carry, delay) = (rc.dir, rc.carry, rc.delay);
        let told = std::mem::take(&mut rc.told);
        for p in self.links[dir.index()].reroute(now, link, carry) {
            self.on_dropped(p);
        }
        // Path delays: the link's share of the data path of its flows and, with a second
        // bottleneck, of the return path of the flows whose feedback crosses it.
        let old = std::mem::replace(&mut self.routes.link_delay[dir.index()], delay);
        let two_way = self.links.len() == 2;
        for flow in &mut self.flows {
            if flow.dir() == dir {
                flow.fwd_delay = flow.fwd_delay - old + delay;
            } else if two_way {
                flow.ret_delay = flow.ret_delay - old + delay;
                // The receiver adds it to its estimator's RTT updates.
                if let FlowState::Media(m) = &mut flow.state { m.receiver.set_return_delay(Some(flow.ret_delay)); }
            }
        }
        for f in told {
            let Some(m) = self.media(f) else { continue };
            m.sender.handle_route_change(now);
            self.schedule_pacer(f);
        }
    }

    /// Flow ids a route change tells by default: every media flow whose data crosses `dir`.
    pub(super) fn media_flows_on(&self, dir: Direction) -> Vec<u32> {
        self.flows.iter().filter(|f| f.dir() == dir && matches!(f.state, FlowState::Media(_))).map(|f| f.info.id).collect()
    }
}
