//! [`EpochReport`]: a quiet renderer for Burn's `Learner`, one line per
//! split and epoch.

use std::collections::HashMap;

use burn::train::logger::{EvaluationProgressLogger, TrainingProgressLogger};
use burn::train::metric::{MetricDefinition, MetricId, NumericEntry};
use burn::train::renderer::{
    EvaluationName, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining,
};

/// A renderer for Burn's `Learner` that prints one line per split and epoch —
/// `epoch 3/10 train Accuracy 96.1000  Loss 0.1230` — the mean of each
/// numeric metric over the split.
///
/// Without Burn's `tui` feature, or when the output is not a terminal (a
/// log file, CI), Burn's own renderer prints a debug line per batch and no
/// metric values; this one reads the same in a terminal and in a log.
///
/// Give it to the training with `SupervisedTraining::renderer`:
///
/// ```
/// use burn::train::renderer::MetricsRenderer;
///
/// let renderer: Box<dyn MetricsRenderer> = Box::new(zrecord_burn::EpochReport::new());
/// // SupervisedTraining::new(dir, train, valid).renderer(renderer) ...
/// ```
#[derive(Default)]
pub struct EpochReport {
    names: HashMap<MetricId, String>,
    /// Metric name → (sum, count) over the current split.
    sums: Vec<(String, f64, usize)>,
    split: String,
    epoch: usize,
    epochs: usize,
}

impl EpochReport {
    /// A new renderer.
    pub fn new() -> Self {
        Self::default()
    }

    fn record(&mut self, state: MetricState) {
        let MetricState::Numeric(entry, Some(value)) = state else {
            return;
        };
        let name = self
            .names
            .get(&entry.metric_id)
            .cloned()
            .unwrap_or_else(|| format!("{:?}", entry.metric_id));
        let (value, count) = match value {
            NumericEntry::Value(v) => (v, 1),
            NumericEntry::Aggregated {
                aggregated_value,
                count,
            } => (aggregated_value * count as f64, count),
            NumericEntry::Final(_) => return,
        };
        match self.sums.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, sum, n)) => {
                *sum += value;
                *n += count;
            }
            None => self.sums.push((name, value, count)),
        }
    }
}

impl MetricsRendererTraining for EpochReport {
    fn update_train(&mut self, state: MetricState) {
        self.record(state);
    }

    fn update_valid(&mut self, state: MetricState) {
        self.record(state);
    }
}

impl MetricsRendererEvaluation for EpochReport {
    fn update_test(&mut self, _name: EvaluationName, state: MetricState) {
        self.record(state);
    }
}

impl TrainingProgressLogger for EpochReport {
    fn start(
        &mut self,
        total_epochs: usize,
        starting_epoch: usize,
        _total_items: Option<usize>,
        _label: Option<&str>,
    ) {
        self.epochs = total_epochs;
        self.epoch = starting_epoch.max(1);
    }

    fn update_epoch(&mut self, epoch: usize) {
        self.epoch = epoch + 1;
    }

    fn start_split(&mut self, split: &str, _total_items: usize) {
        self.split = split.to_string();
        self.sums.clear();
    }

    fn update_split(&mut self, _items_processed: usize) {}

    fn end_split(&mut self) {
        let metrics: Vec<String> = self
            .sums
            .iter()
            .map(|(name, sum, n)| format!("{name} {:.4}", sum / (*n).max(1) as f64))
            .collect();
        println!(
            "epoch {}/{} {:<5} {}",
            self.epoch,
            self.epochs,
            self.split,
            metrics.join("  "),
        );
    }

    fn end(&mut self) {}

    fn log_event_training(&mut self, _event: String) {}
}

impl EvaluationProgressLogger for EpochReport {
    fn start_global_progress(&mut self, _total_tests: usize) {}

    fn start_test(&mut self, _name: &str, _total_items: usize) {}

    fn update_test_progress(&mut self, _items_processed: usize) {}

    fn end_test(&mut self) {}

    fn end_global_progress(&mut self) {}

    fn log_event_evaluation(&mut self, _event: String) {}
}

impl MetricsRenderer for EpochReport {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        self.names
            .insert(definition.metric_id, definition.name.to_string());
    }
}
