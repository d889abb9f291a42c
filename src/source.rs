//! Source text, byte spans and line/column lookup.
//!
//! A [`Span`] is a half-open byte range `[start, end)` into one [`SourceFile`].
//! Lines and columns shown to users are 1-based; columns count Unicode scalar
//! values (characters), not bytes, so that editors and LLMs agree on them.

/// A half-open byte range `[start, end)` into the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from byte offsets (saturating at `u32::MAX`).
    pub fn new(start: usize, end: usize) -> Span {
        let clamp = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        Span {
            start: clamp(start),
            end: clamp(end.max(start)),
        }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// The byte range, for slicing the source text.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A named source text with a line index.
///
/// A file may be *joined* ([`SourceFile::joined`]): its text is a prelude
/// (the declarations of a `--tools` file) followed by a program, and every
/// position is shown in the part it falls in, under that part's name and
/// with that part's lines ([`SourceFile::locate`]).
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The name shown in diagnostics (a path, or `<stdin>`).
    pub name: String,
    /// The full text.
    pub text: String,
    line_starts: Vec<usize>,
    parts: Option<Box<Parts>>,
}

/// The two parts of a joined file: the prelude (`text[..prelude_len]`) and
/// the program after it.
#[derive(Clone, Debug)]
struct Parts {
    prelude: SourceFile,
    program: SourceFile,
}

/// A 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LineCol {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

impl SourceFile {
    /// Indexes `text` under `name`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceFile {
            name: name.into(),
            text,
            line_starts,
            parts: None,
        }
    }

    /// A joined file: `text` is a prelude of `prelude_len` bytes (e.g. the
    /// declarations of a `--tools` file), then a program. Positions are
    /// shown in `prelude_shown` under `prelude_name` and in `program_shown`
    /// under `name`: the texts the files hold, of the same lengths as the
    /// two parts (which may have declarations blanked out).
    pub fn joined(
        name: impl Into<String>,
        text: String,
        prelude: (impl Into<String>, &str),
        program_shown: &str,
    ) -> SourceFile {
        let name = name.into();
        let mut file = SourceFile::new(name.clone(), text);
        file.parts = Some(Box::new(Parts {
            prelude: SourceFile::new(prelude.0, prelude.1),
            program: SourceFile::new(name, program_shown),
        }));
        file
    }

    /// Where a byte offset is shown: the part it falls in (`self` unless
    /// the file is [joined](SourceFile::joined)) and its offset there.
    pub fn locate(&self, offset: u32) -> (&SourceFile, u32) {
        match &self.parts {
            None => (self, offset),
            Some(parts) => {
                let len = u32::try_from(parts.prelude.text.len()).unwrap_or(u32::MAX);
                if offset < len {
                    (&parts.prelude, offset)
                } else {
                    (&parts.program, offset - len)
                }
            }
        }
    }

    /// The length of a joined file's prelude (0 for a plain file).
    pub fn prelude_len(&self) -> u32 {
        self.parts.as_ref().map_or(0, |p| {
            u32::try_from(p.prelude.text.len()).unwrap_or(u32::MAX)
        })
    }

    /// The line and column of a byte offset (clamped to the text), in the
    /// part of a joined file it falls in.
    pub fn line_col(&self, offset: u32) -> LineCol {
        match self.locate(offset) {
            (part, at) if !std::ptr::eq(part, self) => part.line_col(at),
            _ => self.own_line_col(offset),
        }
    }

    /// [`SourceFile::line_col`] in this file's own text.
    fn own_line_col(&self, offset: u32) -> LineCol {
        let mut offset = (offset as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let column = self.text[start..offset].chars().count() + 1;
        LineCol {
            line: line + 1,
            column,
        }
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |&e| e - 1);
        self.text[start..end.max(start)].trim_end_matches('\r')
    }

    /// The source text under a span (empty if the span is out of range).
    pub fn slice(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or("")
    }
}
