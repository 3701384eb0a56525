//! Knobs of LossBasedBweV2: one field per key of libwebrtc's `WebRTC-Bwe-LossBasedBweV2` field
//! trial, with libwebrtc's defaults (`LossBasedBweV2::CreateConfig`, branch-heads/7871), and
//! the validity rules of `IsConfigValid`. An invalid or disabled configuration gives a disabled
//! estimator, as in libwebrtc.

use crate::units::{Bitrate, Duration};

/// `WebRTC-Bwe-LossBasedBweV2` (field-trial key in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct LossV2Config {
    /// [Enabled]
    pub enabled: bool,
    /// Increases while loss-limited are capped at this × the acked rate [BwRampupUpperBoundFactor].
    pub bw_rampup_upper_bound_factor: f64,
    /// … or this × while the acked rate is below the hold threshold × the HOLD rate
    /// [BwRampupUpperBoundInHoldFactor].
    pub bw_rampup_upper_bound_in_hold_factor: f64,
    /// [BwRampupUpperBoundHoldThreshold]
    pub bw_rampup_upper_bound_hold_threshold: f64,
    /// Candidate upper bound grows by up to this × the acked rate since the last reduction
    /// [BwRampupAccelMaxFactor] (0 = off).
    pub rampup_acceleration_max_factor: f64,
    /// … reaching the maximum after this long [BwRampupAccelMaxoutTime].
    pub rampup_acceleration_maxout_time: Duration,
    /// Candidates are these multiples of the current estimate [CandidateFactors].
    pub candidate_factors: Vec<f64>,
    /// Linear bias towards higher bandwidth in the objective, per kbit/s [HigherBwBiasFactor].
    pub higher_bandwidth_bias_factor: f64,
    /// Logarithmic bias towards higher bandwidth [HigherLogBwBiasFactor].
    pub higher_log_bandwidth_bias_factor: f64,
    /// [InherentLossLowerBound]
    pub inherent_loss_lower_bound: f64,
    /// Above this average loss the bias turns against high bandwidth
    /// [LossThresholdOfHighBandwidthPreference].
    pub loss_threshold_of_high_bandwidth_preference: f64,
    /// [BandwidthPreferenceSmoothingFactor]
    pub bandwidth_preference_smoothing_factor: f64,
    /// Inherent loss ≤ offset + balance / B [InherentLossUpperBoundBwBalance].
    pub inherent_loss_upper_bound_bandwidth_balance: Bitrate,
    /// [InherentLossUpperBoundOffset]
    pub inherent_loss_upper_bound_offset: f64,
    /// [InitialInherentLossEstimate]
    pub initial_inherent_loss_estimate: f64,
    /// [NewtonIterations]
    pub newton_iterations: u32,
    /// [NewtonStepSize]
    pub newton_step_size: f64,
    /// [AckedRateCandidate]
    pub append_acknowledged_rate_candidate: bool,
    /// [DelayBasedCandidate]
    pub append_delay_based_estimate_candidate: bool,
    /// [UpperBoundCandidateInAlr]
    pub append_upper_bound_candidate_in_alr: bool,
    /// An observation spans at least this much send time [ObservationDurationLowerBound].
    pub observation_duration_lower_bound: Duration,
    /// Observations kept [ObservationWindowSize].
    pub observation_window_size: usize,
    /// [SendingRateSmoothingFactor]
    pub sending_rate_smoothing_factor: f64,
    /// Age weight of the average loss [InstantUpperBoundTemporalWeightFactor].
    pub instant_upper_bound_temporal_weight_factor: f64,
    /// Upper bound = balance / (average loss − offset) [InstantUpperBoundBwBalance].
    pub instant_upper_bound_bandwidth_balance: Bitrate,
    /// [InstantUpperBoundLossOffset]
    pub instant_upper_bound_loss_offset: f64,
    /// Age weight of the likelihood [TemporalWeightFactor].
    pub temporal_weight_factor: f64,
    /// The acked-rate candidate is the acked rate × this [BwBackoffLowerBoundFactor].
    pub bandwidth_backoff_lower_bound_factor: f64,
    /// Increases after a loss-limited update are capped at this × the estimate for
    /// `delayed_increase_window` [MaxIncreaseFactor].
    pub max_increase_factor: f64,
    /// [DelayedIncreaseWindow]
    pub delayed_increase_window: Duration,
    /// [NotIncreaseIfInherentLossLessThanAverageLoss]
    pub not_increase_if_inherent_loss_less_than_average_loss: bool,
    /// No acked-rate candidate in ALR (except while padding) [NotUseAckedRateInAlr].
    pub not_use_acked_rate_in_alr: bool,
    /// [UseInStartPhase]
    pub use_in_start_phase: bool,
    /// Observations needed before the estimate is used [MinNumObservations].
    pub min_num_observations: u32,
    /// The estimate never drops below this × the acked rate [LowerBoundByAckedRateFactor].
    pub lower_bound_by_acked_rate_factor: f64,
    /// Each new HOLD lasts this × the previous one [HoldDurationFactor].
    pub hold_duration_factor: f64,
    /// Likelihood over bytes instead of packets [UseByteLossRate].
    pub use_byte_loss_rate: bool,
    /// How long the padding state lasts without a further increase [PaddingDuration].
    pub padding_duration: Duration,
    /// [BoundBestCandidate]
    pub bound_best_candidate: bool,
    /// A loss spike sent at ≥ this × the median send rate is not filtered out
    /// [MedianSendingRateFactor].
    pub median_sending_rate_factor: f64,
}

impl Default for LossV2Config {
    fn default() -> Self {
        LossV2Config {
            enabled: true,
            bw_rampup_upper_bound_factor: 1.5,
            bw_rampup_upper_bound_in_hold_factor: 1.2,
            bw_rampup_upper_bound_hold_threshold: 1.3,
            rampup_acceleration_max_factor: 0.0,
            rampup_acceleration_maxout_time: Duration::from_secs(60),
            candidate_factors: vec![1.02, 1.0, 0.95],
            higher_bandwidth_bias_factor: 0.0002,
            higher_log_bandwidth_bias_factor: 0.02,
            inherent_loss_lower_bound: 1e-3,
            loss_threshold_of_high_bandwidth_preference: 0.2,
            bandwidth_preference_smoothing_factor: 0.002,
            inherent_loss_upper_bound_bandwidth_balance: Bitrate::from_kbps(100),
            inherent_loss_upper_bound_offset: 0.05,
            initial_inherent_loss_estimate: 0.01,
            newton_iterations: 1,
            newton_step_size: 0.75,
            append_acknowledged_rate_candidate: true,
            append_delay_based_estimate_candidate: true,
            append_upper_bound_candidate_in_alr: false,
            observation_duration_lower_bound: Duration::from_ms(250),
            observation_window_size: 15,
            sending_rate_smoothing_factor: 0.0,
            instant_upper_bound_temporal_weight_factor: 0.9,
            instant_upper_bound_bandwidth_balance: Bitrate::from_kbps(100),
            instant_upper_bound_loss_offset: 0.05,
            temporal_weight_factor: 0.9,
            bandwidth_backoff_lower_bound_factor: 1.0,
            max_increase_factor: 1.3,
            delayed_increase_window: Duration::from_ms(300),
            not_increase_if_inherent_loss_less_than_average_loss: true,
            not_use_acked_rate_in_alr: true,
            use_in_start_phase: true,
            min_num_observations: 3,
            lower_bound_by_acked_rate_factor: 1.0,
            hold_duration_factor: 2.0,
            use_byte_loss_rate: true,
            padding_duration: Duration::from_secs(2),
            bound_best_candidate: true,
            median_sending_rate_factor: 2.0,
        }
    }
}

impl LossV2Config {
    /// libwebrtc's `IsConfigValid`: `Err` names the first rule broken.
    pub fn validate(&self) -> Result<(), String> {
        let c = self;
        let unit = |v: f64| (0.0..1.0).contains(&v);
        let checks: [(bool, &str); 27] = [
            (c.bw_rampup_upper_bound_factor > 1.0, "bandwidth rampup upper bound factor must be > 1"),
            (c.bw_rampup_upper_bound_in_hold_factor > 1.0, "bandwidth rampup upper bound factor in hold must be > 1"),
            (c.bw_rampup_upper_bound_hold_threshold >= 0.0, "bandwidth rampup hold threshold must be ≥ 0"),
            (c.rampup_acceleration_max_factor >= 0.0, "rampup acceleration max factor must be ≥ 0"),
            (c.rampup_acceleration_maxout_time > Duration::ZERO, "rampup acceleration maxout time must be > 0"),
            (c.candidate_factors.iter().all(|&f| f > 0.0), "all candidate factors must be > 0"),
            // At least one candidate other than the current estimate.
            (
                c.append_acknowledged_rate_candidate
                    || c.append_delay_based_estimate_candidate
                    || c.candidate_factors.iter().any(|&f| f != 1.0),
                "the configuration does not allow generating candidates",
            ),
            (c.higher_bandwidth_bias_factor >= 0.0, "higher bandwidth bias factor must be ≥ 0"),
            (unit(c.inherent_loss_lower_bound), "inherent loss lower bound must be in [0, 1)"),
            (unit(c.loss_threshold_of_high_bandwidth_preference), "loss threshold of high bandwidth preference must be in [0, 1)"),
            (
                c.bandwidth_preference_smoothing_factor > 0.0 && c.bandwidth_preference_smoothing_factor <= 1.0,
                "bandwidth preference smoothing factor must be in (0, 1]",
            ),
            (c.inherent_loss_upper_bound_bandwidth_balance > Bitrate::ZERO, "inherent loss upper bound bandwidth balance must be > 0"),
            (
                c.inherent_loss_upper_bound_offset >= c.inherent_loss_lower_bound && c.inherent_loss_upper_bound_offset < 1.0,
                "inherent loss upper bound offset must be in [lower bound, 1)",
            ),
            (unit(c.initial_inherent_loss_estimate), "initial inherent loss estimate must be in [0, 1)"),
            (c.newton_iterations > 0, "Newton iterations must be > 0"),
            (c.newton_step_size > 0.0, "Newton step size must be > 0"),
            (c.observation_duration_lower_bound > Duration::ZERO, "observation duration lower bound must be > 0"),
            (c.observation_window_size >= 2, "observation window size must be ≥ 2"),
            (unit(c.sending_rate_smoothing_factor), "sending rate smoothing factor must be in [0, 1)"),
            (
                c.instant_upper_bound_temporal_weight_factor > 0.0 && c.instant_upper_bound_temporal_weight_factor <= 1.0,
                "instant upper bound temporal weight factor must be in (0, 1]",
            ),
            (c.instant_upper_bound_bandwidth_balance > Bitrate::ZERO, "instant upper bound bandwidth balance must be > 0"),
            (unit(c.instant_upper_bound_loss_offset), "instant upper bound loss offset must be in [0, 1)"),
            (c.temporal_weight_factor > 0.0 && c.temporal_weight_factor <= 1.0, "temporal weight factor must be in (0, 1]"),
            (c.bandwidth_backoff_lower_bound_factor <= 1.0, "bandwidth backoff lower bound factor must be ≤ 1"),
            (c.max_increase_factor > 0.0, "max increase factor must be > 0"),
            (c.delayed_increase_window > Duration::ZERO && c.min_num_observations > 0, "delayed increase window and min observations must be > 0"),
            (c.lower_bound_by_acked_rate_factor >= 0.0, "lower bound by acked rate factor must be ≥ 0"),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(format!("LossBasedBweV2: {why}")),
            None => Ok(()),
        }
    }
}
