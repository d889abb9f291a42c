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

    #[test]
    fn k_of_n() {
        let a = Some(Vote::Program("a".into()));
        let b = Some(Vote::Program("b".into()));
        assert_eq!(decide(&[a.clone(), b.clone(), a.clone()], 2), Ok((0, 2)));
        assert_eq!(decide(&[b.clone(), a.clone(), a.clone()], 2), Ok((1, 2)));
        assert_eq!(decide(&[a.clone(), b.clone(), None], 2), Err(1));
        assert_eq!(decide(&[None, None], 1), Err(0));
        assert_eq!(decide(&[Some(Vote::Answer), a, Some(Vote::Answer)], 2), Ok((0, 2)));
    }
}
