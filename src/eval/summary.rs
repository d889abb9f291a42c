//! The figures of a suite's runs: per case, the success rate with its
//! Wilson score interval, the distribution of outcomes (distinct value and
//! call sequence), calls, rounds and reward per run; and their forms: a
//! terminal table, JSON, JUnit XML, and the comparison with a baseline.

use super::record::RunRecord;
use serde::Serialize;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// The 95% Wilson score interval of `k` successes in `n` trials
/// (`(0, 1)` when `n` is 0).
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (n, p) = (n as f64, k as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// One case's figures.
#[derive(Clone, Debug, Serialize)]
pub struct CaseSummary {
    /// The case.
    pub name: String,
    /// Runs made.
    pub runs: usize,
    /// Runs that passed.
    pub passed: usize,
    /// Runs that could not be judged: an error of the infrastructure (the
    /// model server down or unreachable), not a failed criterion.
    pub errored: usize,
    /// `passed / (runs - errored)`: errored runs are left out.
    pub rate: f64,
    /// The 95% Wilson interval of the rate.
    pub interval: (f64, f64),
    /// Distinct outcomes (value via call sequence) → runs, most frequent first.
    pub outcomes: Vec<(String, usize)>,
    /// Mean calls per run.
    pub mean_calls: f64,
    /// Mean model rounds per run.
    pub mean_rounds: f64,
    /// Mean reward over the runs that have one.
    pub mean_reward: Option<f64>,
    /// Mean session time per run, milliseconds.
    pub mean_ms: f64,
    /// Mean time `lt eval` added per run (checks, replay, criteria), ms.
    pub mean_overhead_ms: f64,
    /// Every run.
    pub records: Vec<RunRecord>,
}

impl CaseSummary {
    /// The figures of `records`, the runs of case `name`.
    pub fn new(name: &str, mut records: Vec<RunRecord>) -> CaseSummary {
        records.sort_by_key(|r| r.run);
        let runs = records.len();
        let passed = records.iter().filter(|r| r.passed()).count();
        let errored = records.iter().filter(|r| r.errored.is_some()).count();
        let judged = runs - errored;
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for r in &records {
            *counts.entry(r.outcome_key()).or_default() += 1;
        }
        let mut outcomes: Vec<_> = counts.into_iter().collect();
        outcomes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mean = |f: &dyn Fn(&RunRecord) -> f64| {
            if runs == 0 {
                0.0
            } else {
                records.iter().map(f).sum::<f64>() / runs as f64
            }
        };
        let rewards: Vec<f64> = records.iter().filter_map(|r| r.reward).collect();
        CaseSummary {
            name: name.to_string(),
            runs,
            passed,
            errored,
            rate: if judged == 0 {
                0.0
            } else {
                passed as f64 / judged as f64
            },
            interval: wilson(passed, judged),
            outcomes,
            mean_calls: mean(&|r| r.calls.len() as f64),
            mean_rounds: mean(&|r| r.rounds as f64),
            mean_reward: (!rewards.is_empty())
                .then(|| rewards.iter().sum::<f64>() / rewards.len() as f64),
            mean_ms: mean(&|r| r.ms),
            mean_overhead_ms: mean(&|r| r.overhead_ms),
            records,
        }
    }

    /// The first failing run's reasons, one per line.
    pub fn first_failure(&self) -> Option<String> {
        let r = self
            .records
            .iter()
            .find(|r| !r.passed() && r.errored.is_none())?;
        let lines: Vec<String> = r
            .invariants
            .iter()
            .map(|i| format!("invariant: {i}"))
            .chain(r.failed.iter().cloned())
            .collect();
        Some(format!("run {}: {}", r.run, lines.join("; ")))
    }
}

/// The figures over the whole suite.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteSummary {
    /// The suite file.
    pub suite: String,
    /// Per case, in suite order.
    pub cases: Vec<CaseSummary>,
    /// Runs over every case.
    pub runs: usize,
    /// Runs that passed.
    pub passed: usize,
    /// Runs that could not be judged: an error of the infrastructure (the
    /// model server down or unreachable), not a failed criterion.
    pub errored: usize,
    /// `passed / (runs - errored)`: errored runs are left out.
    pub rate: f64,
    /// The 95% Wilson interval.
    pub interval: (f64, f64),
    /// Wall-clock time of the whole evaluation, ms.
    pub elapsed_ms: f64,
}

impl SuiteSummary {
    /// Sums `cases`.
    pub fn new(suite: &str, cases: Vec<CaseSummary>, elapsed_ms: f64) -> SuiteSummary {
        let runs = cases.iter().map(|c| c.runs).sum();
        let passed = cases.iter().map(|c| c.passed).sum();
        let errored: usize = cases.iter().map(|c| c.errored).sum();
        let judged = runs - errored;
        SuiteSummary {
            suite: suite.to_string(),
            runs,
            passed,
            errored,
            rate: if judged == 0 {
                0.0
            } else {
                passed as f64 / judged as f64
            },
            interval: wilson(passed, judged),
            cases,
            elapsed_ms,
        }
    }

    /// `lt eval --json`'s object (see docs/eval.md).
    pub fn to_json(&self) -> Json {
        let cases: Vec<Json> = self
            .cases
            .iter()
            .map(|c| {
                json!({
                    "name": c.name, "runs": c.runs, "passed": c.passed, "errored": c.errored, "rate": c.rate,
                    "interval": [c.interval.0, c.interval.1],
                    "outcomes": c.outcomes.iter().map(|(k, n)| json!({"outcome": k, "runs": n})).collect::<Vec<_>>(),
                    "mean_calls": c.mean_calls, "mean_rounds": c.mean_rounds,
                    "mean_reward": c.mean_reward, "mean_ms": c.mean_ms,
                    "mean_overhead_ms": c.mean_overhead_ms,
                    "records": c.records,
                })
            })
            .collect();
        json!({
            "suite": self.suite, "runs": self.runs, "passed": self.passed, "errored": self.errored, "rate": self.rate,
            "interval": [self.interval.0, self.interval.1], "elapsed_ms": self.elapsed_ms,
            "cases": cases,
        })
    }

    /// The table for people.
    pub fn table(&self) -> String {
        let w = self
            .cases
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!(
            "{:<w$}  {:>5}  {:>7}  {:>15}  {:>6}  {:>6}  {:>8}\n",
            "case", "runs", "success", "95% interval", "calls", "reward", "ms/run"
        );
        for c in &self.cases {
            out.push_str(&format!(
                "{:<w$}  {:>5}  {:>6.1}%  {:>6.1}%–{:>5.1}%  {:>6.2}  {:>6}  {:>8.1}\n",
                c.name,
                c.runs,
                c.rate * 100.0,
                c.interval.0 * 100.0,
                c.interval.1 * 100.0,
                c.mean_calls,
                c.mean_reward.map_or("-".to_string(), |r| format!("{r:.2}")),
                c.mean_ms
            ));
            let keys: Vec<&str> = c.outcomes.iter().map(|(k, _)| k.as_str()).collect();
            let shown = display_outcomes(&keys, 100);
            for ((_, n), k) in c.outcomes.iter().zip(&shown).take(3) {
                out.push_str(&format!("{:<w$}    {n} × {k}\n", ""));
            }
            if let Some(f) = c.first_failure() {
                out.push_str(&format!("{:<w$}    FAIL {}\n", "", shorten(&f, 300)));
            }
            if let Some(r) = c.records.iter().find_map(|r| r.errored.as_ref()) {
                out.push_str(&format!(
                    "{:<w$}    ERRORED {} runs, not counted in the rate: {}\n",
                    "",
                    c.errored,
                    shorten(r, 300)
                ));
            }
        }
        if self.errored > 0 {
            out.push_str(&format!(
                "errored: {} runs could not be judged (infrastructure: the model server down or unreachable); the rates leave them out\n",
                self.errored
            ));
        }
        out.push_str(&format!(
            "total: {}/{} runs passed ({:.1}%, 95% interval {:.1}%–{:.1}%) in {:.0} ms\n",
            self.passed,
            self.runs,
            self.rate * 100.0,
            self.interval.0 * 100.0,
            self.interval.1 * 100.0,
            self.elapsed_ms
        ));
        out
    }

    /// JUnit XML: one `<testcase>` per run, a `<failure>` per failing run.
    pub fn junit(&self) -> String {
        let failures = self.runs - self.passed - self.errored;
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"lt eval\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\">\n",
            self.runs, self.errored
        );
        for c in &self.cases {
            out.push_str(&format!(
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                xml(&c.name),
                c.runs,
                c.runs - c.passed - c.errored,
                c.errored
            ));
            for r in &c.records {
                out.push_str(&format!(
                    "    <testcase classname=\"{}\" name=\"run {}\" time=\"{:.3}\">",
                    xml(&c.name),
                    r.run,
                    r.ms / 1000.0
                ));
                if let Some(e) = &r.errored {
                    out.push_str(&format!(
                        "\n      <error message=\"{}\">{}</error>\n    ",
                        xml(e),
                        xml(e)
                    ));
                } else if !r.passed() {
                    let why: Vec<String> = r
                        .invariants
                        .iter()
                        .map(|i| format!("invariant: {i}"))
                        .chain(r.failed.iter().cloned())
                        .collect();
                    out.push_str(&format!(
                        "\n      <failure message=\"{}\">{}</failure>\n    ",
                        xml(why.first().map_or("", String::as_str)),
                        xml(&why.join("\n"))
                    ));
                }
                out.push_str("</testcase>\n");
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }

    /// The cases whose rate fell below `baseline`'s (an `lt eval --json`
    /// output), each in words; a case the baseline lacks is not compared.
    /// Errors: the baseline is not such an output, or holds none of this
    /// suite's cases (another suite's: the gate would compare nothing).
    pub fn regressions(&self, baseline: &Json) -> Result<Vec<String>, String> {
        let cases = baseline
            .get("cases")
            .and_then(Json::as_array)
            .ok_or("the baseline has no `cases` array (write one with `lt eval --json`)")?;
        let named = |c: &CaseSummary| {
            cases
                .iter()
                .any(|b| b.get("name").and_then(Json::as_str) == Some(&c.name))
        };
        if !self.cases.is_empty() && !self.cases.iter().any(named) {
            let held: Vec<&str> = cases
                .iter()
                .filter_map(|b| b.get("name").and_then(Json::as_str))
                .collect();
            return Err(format!(
                "it holds none of this suite's cases (it holds: {}), so nothing would be compared\n  help: write this suite's baseline with `lt eval SUITE.toml --json > FILE`",
                if held.is_empty() { "no case".to_string() } else { held.join(", ") }
            ));
        }
        let mut out = Vec::new();
        // A case whose every run errored has no rate to compare.
        for c in self.cases.iter().filter(|c| c.errored < c.runs) {
            let old = cases
                .iter()
                .find(|b| b.get("name").and_then(Json::as_str) == Some(&c.name))
                .and_then(|b| b.get("rate"))
                .and_then(Json::as_f64);
            if let Some(old) = old.filter(|old| c.rate + 1e-9 < *old) {
                out.push(format!(
                    "{}: success rate fell from {:.1}% to {:.1}%",
                    c.name,
                    old * 100.0,
                    c.rate * 100.0
                ));
            }
        }
        Ok(out)
    }
}

impl SuiteSummary {
    /// The difference with `other` (the same cases under another
    /// configuration): per case of either, both rates and `b - a` (`null`
    /// where a side lacks the case); overall likewise.
    pub fn difference(&self, other: &SuiteSummary) -> Json {
        let cases: Vec<Json> = self
            .pairs(other)
            .into_iter()
            .map(|(name, a, b)| {
                json!({"name": name, "a": a, "b": b, "delta": a.zip(b).map(|(a, b)| b - a)})
            })
            .collect();
        json!({"a": self.suite, "b": other.suite, "cases": cases,
               "overall": {"a": self.rate, "b": other.rate, "delta": other.rate - self.rate}})
    }

    /// [`SuiteSummary::difference`] for people.
    pub fn difference_table(&self, other: &SuiteSummary) -> String {
        let pct = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0));
        let mut out = format!("difference: A = {}, B = {}\n", self.suite, other.suite);
        for (name, a, b) in self.pairs(other) {
            let delta = a.zip(b).map_or("-".to_string(), |(a, b)| {
                format!("{:+.1} points", (b - a) * 100.0)
            });
            out.push_str(&format!("  {name}: A {} B {} ({delta})\n", pct(a), pct(b)));
        }
        out.push_str(&format!(
            "  overall: A {} B {} ({:+.1} points)\n",
            pct(Some(self.rate)),
            pct(Some(other.rate)),
            (other.rate - self.rate) * 100.0
        ));
        out
    }

    fn pairs(&self, other: &SuiteSummary) -> Vec<(String, Option<f64>, Option<f64>)> {
        let rate = |s: &SuiteSummary, n: &str| s.cases.iter().find(|c| c.name == n).map(|c| c.rate);
        let mut names: Vec<&str> = self.cases.iter().map(|c| c.name.as_str()).collect();
        for c in &other.cases {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
        names
            .into_iter()
            .map(|n| (n.to_string(), rate(self, n), rate(other, n)))
            .collect()
    }
}

/// The outcomes `keys` (distinct texts, as grouped) shortened for display
/// to about `max` characters each, yet still distinct: a long key that
/// shares a long beginning with another shows its beginning, then the part
/// where it differs (`…`-marked). Grouping is always by the full text;
/// this is only what a person sees.
pub fn display_outcomes(keys: &[&str], max: usize) -> Vec<String> {
    let chars: Vec<Vec<char>> = keys.iter().map(|k| k.chars().collect()).collect();
    let common = |a: &[char], b: &[char]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let mut shown: Vec<String> = chars
        .iter()
        .enumerate()
        .map(|(i, k)| {
            if k.len() <= max {
                return k.iter().collect();
            }
            let p = chars
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| common(k, o))
                .max()
                .unwrap_or(0);
            if p < max.saturating_sub(10) {
                return shorten(&k.iter().collect::<String>(), max);
            }
            let head: String = k.iter().take(max / 3).collect();
            let from = p.saturating_sub(max / 6).max(max / 3);
            let to = (from + max / 2).min(k.len());
            let window: String = k[from..to].iter().collect();
            let tail = if to < k.len() { "…" } else { "" };
            format!("{head}…{window}{tail}")
        })
        .collect();
    // Should two still read alike, number them.
    for i in 0..shown.len() {
        if shown.iter().filter(|s| **s == shown[i]).count() > 1 {
            let same: Vec<usize> = (0..shown.len()).filter(|j| shown[*j] == shown[i]).collect();
            for (n, j) in same.into_iter().enumerate() {
                shown[j] = format!("{} (#{})", shown[j], n + 1);
            }
        }
    }
    shown
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

/// `s` escaped for XML text and attributes (control characters other
/// than tab and newline dropped: XML 1.0 cannot hold them).
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push('\t'),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}
