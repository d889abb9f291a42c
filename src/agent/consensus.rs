//! Consensus over samples (seed 001, "consensus"): ask for N programs,
//! accept one only when K of them are the same program.
//!
//! "The same" is decided on the lowered IR printed without the source
//! ([`crate::ir::print::print_anonymous`]): formatting, comments, variable
//! names and the order of declarations do not count; tools, fields,
//! literals and the shape of the computation do. Only checked programs
//! vote. Final answers (replies without a program, after a run) vote too,
//! as one group: K final answers end the session.

/// One sample's vote: a checked program's normal form, or a final answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vote {
    /// A program that checked, by its anonymous IR.
    Program(String),
    /// A final answer.
    Answer,
}

/// The winning vote: the first sample of the largest group with at least
/// `agree` members (ties go to the group whose first sample came first),
/// and that group's size. `None` when no group is large enough; then the
/// size of the largest group.
pub fn decide(votes: &[Option<Vote>], agree: usize) -> Result<(usize, usize), usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, v) in votes.iter().enumerate() {
        let Some(v) = v else { continue };
        if votes[..i].iter().any(|w| w.as_ref() == Some(v)) {
            continue;
        }
        let n = votes.iter().filter(|w| w.as_ref() == Some(v)).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((i, n));
        }
    }
    match best {
        Some((i, n)) if n >= agree => Ok((i, n)),
        Some((_, n)) => Err(n),
        None => Err(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(text: &str) -> String {
        let analysis = crate::types::check_source(text);
        assert!(analysis.is_ok(), "{text}: {:?}", analysis.diagnostics);
        let checked = analysis.into_checked().expect("checked");
        let ir = crate::ir::lower::lower(&checked).expect("lowered");
        crate::ir::print::print_anonymous(&ir)
    }

    const A: &str = "tool a: String -{Read}-> {id: String, n: Int};
tool b: {id: String, amount: Int} -{Write}-> {tx: String};
match exec tool a \"c1\" {
  Ok(acc) => match exec tool b {id = acc.id, amount = acc.n} { Ok(r) => r.tx, Err(e) => e },
  Err(e) => e
}";

    #[test]
    fn names_formatting_declaration_order_and_pure_field_order_do_not_count() {
        let b = "// the same, written otherwise
tool b: {id: String, amount: Int} -{Write}-> {tx: String};
tool a: String -{Read}-> {id: String, n: Int};
match exec tool a \"c1\" { Ok(account) =>
    match exec tool b {amount = account.n, id = account.id} {
      Ok(refund) => refund.tx,
      Err(why) => why },
  Err(e) => e }";
        assert_eq!(normal(A), normal(b));
        assert_ne!(normal(A), normal(&A.replace("c1", "c2")));
        assert_ne!(normal(A), normal(&A.replace("r.tx", "acc.id")));
    }

    #[test]
    fn the_order_of_calls_in_a_record_counts() {
        let one = "tool t: Int -{Read}-> Int;
{x = match exec tool t 1 { Ok(v) => v, Err(e) => 0 }, y = match exec tool t 2 { Ok(v) => v, Err(e) => 0 }}";
        let two = "tool t: Int -{Read}-> Int;
{y = match exec tool t 2 { Ok(v) => v, Err(e) => 0 }, x = match exec tool t 1 { Ok(v) => v, Err(e) => 0 }}";
        assert_ne!(normal(one), normal(two));
    }

    #[test]
    fn k_of_n() {
        let a = Some(Vote::Program("a".into()));
        let b = Some(Vote::Program("b".into()));
        assert_eq!(decide(&[a.clone(), b.clone(), a.clone()], 2), Ok((0, 2)));
        assert_eq!(decide(&[b.clone(), a.clone(), a.clone()], 2), Ok((1, 2)));
        assert_eq!(decide(&[a.clone(), b.clone(), None], 2), Err(1));
        assert_eq!(decide(&[None, None], 1), Err(0));
        assert_eq!(
            decide(&[Some(Vote::Answer), a, Some(Vote::Answer)], 2),
            Ok((0, 2))
        );
    }
}
