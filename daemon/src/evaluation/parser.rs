//! The SEGI stdout parser: an evaluator's stdout, as the byte chunks in which it was read, becomes
//! text and data events (segi.txt; decisions 3 to 8).
//!
//! Pure: no I/O and no clock. The caller feeds chunks with [`Parser::feed`], calls
//! [`Parser::idle`] after 20 ms without output, and [`Parser::finish`] at the end of the stream.
//! Events depend only on the bytes and on where `idle` was called, never on how the bytes were
//! cut into chunks; `idle` only decides where a long text line is cut into events, never whether
//! bytes are text or data.
//!
//! # The rules (decisions 3 to 8)
//! - Outside a data block, every line is text: its content (if any) is one text event, its
//!   terminator (`\n` or `\r\n`) another. A lone `\r` is ordinary text.
//! - A line that is exactly the BEGIN marker opens a block, at the start of the stream or after a
//!   line terminator; that terminator is part of the protocol (segi.txt step 1) and is not emitted.
//!   Neither is the BEGIN line. Inside a block each line is one JSON value, a data event, until the
//!   line that is exactly the END marker, which is not emitted either.
//! - Text is UTF-8 with invalid bytes replaced by U+FFFD. A text event holds at most
//!   [`MAX_TEXT_CHUNK`] bytes of the stream and is never empty.
//! - A line inside a block that is not a JSON value (empty, not UTF-8, not JSON, or longer than
//!   [`MAX_DATA_LINE`]) is emitted as text, its terminator as its own event, with a [`Warning`]
//!   naming the line. A stream that ends inside a block keeps its data and gets a warning.
//!
//! # Choices where the specification is silent
//! - **The held terminator.** A text line's terminator is emitted only once the next line is
//!   known not to be BEGIN: at its first byte that leaves BEGIN's path, at an `idle` call once
//!   the line has such a byte, or at the end of the stream. `idle` never flushes the terminator
//!   while the new line is still empty or a prefix of BEGIN (at most BEGIN and a `\r`: the bytes
//!   held are bounded by the marker's length): flushing it would make the meaning of the stream
//!   depend on timing, an evaluator whose `print("")` and `print(BEGIN)` are 20 ms apart would
//!   leak the protocol's terminator as text. The cost: a line terminator followed by silence
//!   reaches the client only with the next output or at the end, which a terminal cannot show
//!   anyway (the cursor is already at the end of the text).
//! - **A trailing `\r` is held** (by `idle` and by the 64 KiB cut) until the next byte says whether
//!   it starts `\r\n`: so a `\r\n` is never split into two events, whatever the timing.
//! - **UTF-8 is never cut.** The 64 KiB cut moves back to the start of a UTF-8 sequence it would
//!   cut (a text event is then up to 3 bytes shorter than 64 KiB), and `idle` holds an
//!   incomplete sequence at the end of the buffer: a character split across writes does not
//!   become two U+FFFD. Only the end of the stream flushes everything.
//! - **A marker line needs its terminator.** `BEGIN` or `END` as the last bytes of the stream,
//!   without a terminator, are text (POSIX: a line ends with a newline); so is an incomplete last
//!   data line, and the block is then unterminated.
//! - **BEGIN right after END** (no blank line in between) opens a new block: END's terminator is a
//!   line terminator, already swallowed with END. Inside a block, a BEGIN line is not JSON: text
//!   and a warning.
//! - **Data lines are capped** at [`MAX_DATA_LINE`] bytes (the terminator not counted), so memory
//!   stays bounded: once a line in a block is longer, it is text from there on (64 KiB events)
//!   and gets a warning, and the block goes on with the next line.
//! - **Data payloads are the evaluator's JSON text, validated, not re-encoded**
//!   ([`RawValue`]): a client gets exactly what the evaluator wrote, without surrounding
//!   whitespace, and the parser does not build a tree it would only serialize again.
//! - **Warnings name lines by their number in stdout** (1-based, counting every line, marker
//!   lines included), and by their number inside the block.

use std::borrow::Cow;

use memchr::memchr;
use serde::Serialize;
use serde_json::value::RawValue;

/// The most bytes of the stream one text event holds (decisions 5).
pub const MAX_TEXT_CHUNK: usize = 64 * 1024;

/// The longest line a data block may hold as one JSON value, its terminator not counted.
pub const MAX_DATA_LINE: usize = 16 * 1024 * 1024;

/// An event of the evaluation, serialized as in TuringArena (decisions 8):
/// `{"type":"text","payload":"..."}` and `{"type":"data","payload":<JSON>}`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", content = "payload", rename_all = "lowercase")]
pub enum ParsedEvent {
    /// Never empty; a line terminator is always an event of its own (`"\n"` or `"\r\n"`).
    Text(Cow<'static, str>),
    /// One line of a data block: valid JSON, as the evaluator wrote it, trimmed.
    Data(Box<RawValue>),
}

/// A protocol mistake of the evaluator: reported with the result, never fatal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The stdout line it is about (1-based); for an unterminated block, its BEGIN line.
    pub line: u64,
    pub message: String,
}

/// A line terminator (decisions 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineEnd {
    Lf,
    CrLf,
}

impl LineEnd {
    fn event(self) -> ParsedEvent {
        ParsedEvent::Text(Cow::Borrowed(match self {
            LineEnd::Lf => "\n",
            LineEnd::CrLf => "\r\n",
        }))
    }
}

#[derive(Debug)]
enum State {
    /// Outside a data block.
    Text {
        /// The previous text line's terminator, not emitted yet: it is swallowed if the current
        /// line turns out to be BEGIN. `None` at the start of the stream, after END, or once
        /// emitted.
        held: Option<LineEnd>,
        /// The current line is known not to be BEGIN (and `held` was emitted): its bytes may be
        /// flushed.
        is_text: bool,
    },
    /// Inside the data block opened by the BEGIN line `opened_at`.
    Block {
        opened_at: u64,
        /// The current line went over [`MAX_DATA_LINE`]: it is text up to its terminator.
        overlong: bool,
    },
}

/// Parses one evaluation's stdout; see the module documentation for the rules.
#[derive(Debug)]
pub struct Parser {
    begin: Box<[u8]>,
    end: Box<[u8]>,
    /// The bytes of the current line not emitted yet, never containing `\n`. Between calls,
    /// under `MAX_TEXT_CHUNK` (and a held `\r` or incomplete character) for text, at most
    /// `MAX_DATA_LINE` and a `\r` for a data line.
    pending: Vec<u8>,
    /// Lines completed so far: the current line is number `lines + 1`.
    lines: u64,
    state: State,
    warnings: Vec<Warning>,
}

impl Parser {
    /// A parser for one evaluation with these markers (the values of `EVALUATION_DATA_BEGIN`
    /// and `EVALUATION_DATA_END`).
    ///
    /// # Panics
    /// If a marker is empty, contains `\n` or `\r`, or is not shorter than [`MAX_TEXT_CHUNK`]:
    /// such a marker could never be a whole line, or could be cut by the 64 KiB rule. The
    /// markers are the daemon's own (decisions 2), so this is a bug, not an input error.
    pub fn new(begin_marker: &[u8], end_marker: &[u8]) -> Parser {
        for marker in [begin_marker, end_marker] {
            assert!(
                !marker.is_empty()
                    && marker.len() < MAX_TEXT_CHUNK
                    && !marker.iter().any(|&b| b == b'\n' || b == b'\r'),
                "a SEGI marker must be a non-empty line shorter than 64 KiB: {:?}",
                String::from_utf8_lossy(marker)
            );
        }
        Parser {
            begin: begin_marker.into(),
            end: end_marker.into(),
            pending: Vec::new(),
            lines: 0,
            state: State::Text { held: None, is_text: false },
            warnings: Vec::new(),
        }
    }

    /// Consumes the next chunk of stdout, appending the events it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<ParsedEvent>) {
        let mut rest = chunk;
        while let Some(newline) = memchr(b'\n', rest) {
            if self.pending.is_empty() {
                // The common case, a line whole within the chunk: no copy into `pending`.
                self.complete_line(&rest[..newline], out);
            } else {
                self.pending.extend_from_slice(&rest[..newline]);
                let mut line = std::mem::take(&mut self.pending);
                self.complete_line(&line, out);
                line.clear();
                // Keep the buffer for the next lines, but not the memory of one huge data line.
                line.shrink_to(4 * MAX_TEXT_CHUNK);
                self.pending = line;
            }
            rest = &rest[newline + 1..];
        }
        if !rest.is_empty() {
            self.pending.extend_from_slice(rest);
            self.grew(out);
        }
    }

    /// The stream has been silent for a while (20 ms, decisions 5): flushes the text of the
    /// current line, except what may still turn out to be protocol (a held terminator while the
    /// line may be BEGIN) or part of a terminator or character (a trailing `\r`, an incomplete
    /// UTF-8 sequence). A data line in a block is never flushed: it must be held whole.
    pub fn idle(&mut self, out: &mut Vec<ParsedEvent>) {
        match &mut self.state {
            State::Text { held, is_text } => {
                if !*is_text {
                    if could_be_marker(&self.pending, &self.begin) {
                        return;
                    }
                    if let Some(end) = held.take() {
                        out.push(end.event());
                    }
                    *is_text = true;
                }
            }
            State::Block { overlong: true, .. } => {}
            State::Block { overlong: false, .. } => return,
        }
        let settled = self.pending.len() - unsettled_tail(&self.pending);
        push_text(&self.pending[..settled], out);
        self.pending.drain(..settled);
    }

    /// The end of the stream: flushes everything and returns the warnings of the whole stream.
    pub fn finish(mut self, out: &mut Vec<ParsedEvent>) -> Vec<Warning> {
        match self.state {
            State::Text { held, .. } => {
                if let Some(end) = held {
                    out.push(end.event());
                }
                push_text(&self.pending, out);
            }
            State::Block { opened_at, overlong } => {
                push_text(&self.pending, out);
                let mut message = format!(
                    "the data block opened at stdout line {opened_at} is not closed: the stream ended inside it \
                     (unterminated data block)"
                );
                if !self.pending.is_empty() && !overlong {
                    let last = self.lines + 1;
                    message +=
                        &format!("; its last line, stdout line {last}, has no line terminator and was kept as text");
                }
                self.warnings.push(Warning { line: opened_at, message });
            }
        }
        self.warnings
    }

    /// The warnings so far.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Handles a line whose `\n` was just read; `line` is everything before it.
    fn complete_line(&mut self, line: &[u8], out: &mut Vec<ParsedEvent>) {
        let (content, end) = match line.split_last() {
            Some((b'\r', content)) => (content, LineEnd::CrLf),
            _ => (line, LineEnd::Lf),
        };
        self.lines += 1;
        let number = self.lines;
        match &mut self.state {
            State::Text { held, is_text } => {
                if !*is_text && content == &*self.begin {
                    self.state = State::Block { opened_at: number, overlong: false };
                    return;
                }
                if let Some(held) = held.take() {
                    out.push(held.event());
                }
                push_text(content, out);
                *held = Some(end);
                *is_text = false;
            }
            State::Block { overlong: overlong @ true, .. } => {
                push_text(content, out);
                out.push(end.event());
                *overlong = false;
            }
            State::Block { opened_at, overlong: false } => {
                if content == &*self.end {
                    self.state = State::Text { held: None, is_text: false };
                    return;
                }
                match parse_data(content) {
                    Ok(value) => out.push(ParsedEvent::Data(value)),
                    Err(why) => {
                        let opened_at = *opened_at;
                        self.warn_data_line(number, opened_at, &why);
                        push_text(content, out);
                        out.push(end.event());
                    }
                }
            }
        }
    }

    /// `pending` grew with bytes of a line whose terminator has not come yet: flushes 64 KiB
    /// text events, or gives up on a data line that is too long.
    fn grew(&mut self, out: &mut Vec<ParsedEvent>) {
        let settled = self.pending.len() - usize::from(self.pending.last() == Some(&b'\r'));
        match &mut self.state {
            State::Text { held, is_text } => {
                if settled < MAX_TEXT_CHUNK {
                    return;
                }
                // Longer than any marker: certainly text.
                if let Some(end) = held.take() {
                    out.push(end.event());
                }
                *is_text = true;
            }
            State::Block { opened_at, overlong } => {
                if !*overlong {
                    if settled <= MAX_DATA_LINE {
                        return;
                    }
                    *overlong = true;
                    let opened_at = *opened_at;
                    let why = format!("is longer than {MAX_DATA_LINE} bytes");
                    self.warn_data_line(self.lines + 1, opened_at, &why);
                }
                if settled < MAX_TEXT_CHUNK {
                    return;
                }
            }
        }
        // Whole 64 KiB events only; the rest waits for more bytes, the terminator, or `idle`.
        let mut done = 0;
        while settled - done >= MAX_TEXT_CHUNK {
            let rest = &self.pending[done..];
            let cut = if rest.len() > MAX_TEXT_CHUNK {
                char_boundary(rest, MAX_TEXT_CHUNK)
            } else {
                // Exactly 64 KiB, the end of what was read: a character may still be incomplete.
                rest.len() - unsettled_tail(rest)
            };
            push_text(&rest[..cut], out);
            done += cut;
        }
        self.pending.drain(..done);
    }

    fn warn_data_line(&mut self, line: u64, opened_at: u64, why: &str) {
        let nth = line - opened_at;
        let message = format!(
            "stdout line {line} (line {nth} of the data block opened at line {opened_at}) {why}; it was kept as text"
        );
        self.warnings.push(Warning { line, message });
    }
}

/// Whether the start of a line may still become `marker` followed by `\n` or `\r\n`.
fn could_be_marker(line: &[u8], marker: &[u8]) -> bool {
    marker.starts_with(line) || (line.len() == marker.len() + 1 && line.starts_with(marker) && line.ends_with(b"\r"))
}

/// A data line as a JSON value, or why it is not one.
fn parse_data(content: &[u8]) -> Result<Box<RawValue>, String> {
    if content.len() > MAX_DATA_LINE {
        return Err(format!("is longer than {MAX_DATA_LINE} bytes"));
    }
    if content.is_empty() {
        return Err("is empty, which is not valid JSON".into());
    }
    // serde_json checks UTF-8 itself (inside strings, the only place JSON allows non-ASCII);
    // a separate pass would cost a tenth of the time. Only a failure asks which one it was.
    serde_json::from_slice::<Box<RawValue>>(content).map_err(|err| {
        if let Err(utf8) = std::str::from_utf8(content) {
            return format!("is not valid UTF-8 (at byte {})", utf8.valid_up_to() + 1);
        }
        // serde_json counts lines and columns in the text it was given: here, always line 1.
        let full = err.to_string();
        let position = format!(" at line {} column {}", err.line(), err.column());
        let what = full.strip_suffix(&position).unwrap_or(&full);
        format!("is not valid JSON ({what} at column {})", err.column())
    })
}

/// Appends `bytes` as text events of at most [`MAX_TEXT_CHUNK`] bytes each, cut between UTF-8
/// sequences; nothing if `bytes` is empty.
fn push_text(bytes: &[u8], out: &mut Vec<ParsedEvent>) {
    let mut rest = bytes;
    while !rest.is_empty() {
        let cut = if rest.len() > MAX_TEXT_CHUNK { char_boundary(rest, MAX_TEXT_CHUNK) } else { rest.len() };
        let piece = &rest[..cut];
        // `from_utf8` first: it is much faster on valid text than `from_utf8_lossy`'s scan.
        let text = match std::str::from_utf8(piece) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(piece).into_owned(),
        };
        out.push(ParsedEvent::Text(Cow::Owned(text)));
        rest = &rest[cut..];
    }
}

/// Where to cut `bytes` at most `max` bytes in: `max`, moved back to the start of the UTF-8
/// sequence it would cut. Invalid UTF-8 (more than 3 continuation bytes) is cut at `max`.
fn char_boundary(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    (max.saturating_sub(3)..=max).rev().find(|&i| !is_continuation(bytes[i])).filter(|&i| i > 0).unwrap_or(max)
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// How many bytes at the end of `bytes` must wait for the next ones: a `\r` (maybe the start of
/// `\r\n`) or the start of a UTF-8 sequence that is not complete yet.
fn unsettled_tail(bytes: &[u8]) -> usize {
    if bytes.last() == Some(&b'\r') {
        return 1;
    }
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if is_continuation(byte) {
            continue;
        }
        let width = match byte {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if width > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const BEGIN: &str = "--evaluation-data-begin-7e112fc35845cd01d454";
    const END: &str = "--evaluation-data-end---46c11713eef6050e3ca6";
    /// Markers of another evaluation: what a submission could have seen or guessed.
    const OLD_BEGIN: &str = "--evaluation-data-begin-0123456789abcdef0123";
    const OLD_END: &str = "--evaluation-data-end---0123456789abcdef0123";

    /// An event in a form tests can compare.
    #[derive(Debug, Clone, PartialEq)]
    enum Ev {
        T(String),
        D(Value),
    }

    fn t(text: &str) -> Ev {
        Ev::T(text.into())
    }

    fn d(value: Value) -> Ev {
        Ev::D(value)
    }

    fn simple(events: &[ParsedEvent]) -> Vec<Ev> {
        events
            .iter()
            .map(|event| match event {
                ParsedEvent::Text(text) => Ev::T(text.to_string()),
                ParsedEvent::Data(raw) => Ev::D(serde_json::from_str(raw.get()).unwrap()),
            })
            .collect()
    }

    /// What the caller does: feed chunks, `None` standing for 20 ms of silence.
    fn run(steps: &[Option<&[u8]>]) -> (Vec<ParsedEvent>, Vec<Warning>) {
        let mut parser = Parser::new(BEGIN.as_bytes(), END.as_bytes());
        let mut out = Vec::new();
        for step in steps {
            match step {
                Some(chunk) => parser.feed(chunk, &mut out),
                None => parser.idle(&mut out),
            }
        }
        let warnings = parser.finish(&mut out);
        check_invariants(&out);
        (out, warnings)
    }

    fn parse(stream: &[u8]) -> (Vec<Ev>, Vec<Warning>) {
        let (events, warnings) = run(&[Some(stream)]);
        (simple(&events), warnings)
    }

    /// What holds for every event list: text is never empty, never over 64 KiB, and a line
    /// terminator is always an event of its own.
    fn check_invariants(events: &[ParsedEvent]) {
        for event in events {
            if let ParsedEvent::Text(text) = event {
                assert!(!text.is_empty(), "an empty text event");
                assert!(text.len() <= MAX_TEXT_CHUNK, "a text event of {} bytes", text.len());
                if text.contains('\n') {
                    assert!(text == "\n" || text == "\r\n", "a terminator inside text: {text:?}");
                }
            }
        }
    }

    /// The spec's example stream, with the lines decisions 1 restores (`Hello.` and the markers).
    /// The long line has no final `.`: the spec's event list has none.
    fn example() -> String {
        format!(
            "Hello.\n\
             I'm a very very ... very long line\n\
             \n\
             {BEGIN}\n\
             {{\"type\": \"goal\", \"name\": \"correct\", \"outcome\": true}}\n\
             {{\"type\": \"goal\", \"name\": \"linear_time\", \"outcome\": false}}\n\
             {END}\n\
             Nice! You got 60 points!\n\
             \n\
             {BEGIN}\n\
             {{\"type\": \"score\", \"value\": 60}}\n\
             {END}\n"
        )
    }

    /// The spec's event list; with `idle_split`, the long line is cut where the spec cuts it.
    fn example_events(idle_split: bool) -> Vec<Ev> {
        let mut events = vec![t("Hello."), t("\n")];
        if idle_split {
            events.extend([t("I'm a very very ..."), t(" very long line")]);
        } else {
            events.push(t("I'm a very very ... very long line"));
        }
        events.extend([
            t("\n"),
            d(json!({"type": "goal", "name": "correct", "outcome": true})),
            d(json!({"type": "goal", "name": "linear_time", "outcome": false})),
            t("Nice! You got 60 points!"),
            t("\n"),
            d(json!({"type": "score", "value": 60})),
        ]);
        events
    }

    #[test]
    fn the_spec_example_gives_the_spec_events() {
        let stream = example();
        let cut = stream.find(" very long line").unwrap();
        let (a, b) = stream.as_bytes().split_at(cut);
        let (events, warnings) = run(&[Some(a), None, Some(b)]);
        assert_eq!(simple(&events), example_events(true));
        assert!(warnings.is_empty(), "{warnings:?}");
        // The data payloads are the evaluator's own JSON text.
        let ParsedEvent::Data(raw) = &events[5] else { panic!("not data: {:?}", events[5]) };
        assert_eq!(raw.get(), r#"{"type": "goal", "name": "correct", "outcome": true}"#);
    }

    #[test]
    fn events_serialize_as_in_turingarena() {
        let (events, _) = run(&[Some(example().as_bytes())]);
        let lines: Vec<String> = events.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
        assert_eq!(lines[0], r#"{"type":"text","payload":"Hello."}"#);
        assert_eq!(lines[1], r#"{"type":"text","payload":"\n"}"#);
        assert_eq!(lines[4], r#"{"type":"data","payload":{"type": "goal", "name": "correct", "outcome": true}}"#);
        assert_eq!(lines.last().unwrap(), r#"{"type":"data","payload":{"type": "score", "value": 60}}"#);
        for line in &lines {
            let value: Value = serde_json::from_str(line).unwrap();
            assert_eq!(value.as_object().unwrap().len(), 2, "{line}");
        }
    }

    #[test]
    fn the_example_split_at_every_byte_gives_the_same_events() {
        let stream = example();
        let bytes = stream.as_bytes();
        let expected = example_events(false);
        for i in 0..=bytes.len() {
            let (events, warnings) = run(&[Some(&bytes[..i]), Some(&bytes[i..])]);
            assert_eq!(simple(&events), expected, "split at {i}");
            assert!(warnings.is_empty());
        }
    }

    #[test]
    fn the_example_split_in_three_at_every_pair_of_bytes_gives_the_same_events() {
        let stream = example();
        let bytes = stream.as_bytes();
        let expected = example_events(false);
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let (events, _) = run(&[Some(&bytes[..i]), Some(&bytes[i..j]), Some(&bytes[j..])]);
                assert_eq!(simple(&events), expected, "split at {i} and {j}");
            }
        }
    }

    /// Silence anywhere, even inside a marker or right after the terminator before it, changes
    /// where text is cut, never what is text and what is data.
    #[test]
    fn silence_at_every_byte_changes_no_data() {
        let stream = example();
        let bytes = stream.as_bytes();
        for i in 0..=bytes.len() {
            let (events, warnings) = run(&[Some(&bytes[..i]), None, Some(&bytes[i..])]);
            let events = simple(&events);
            let data: Vec<&Ev> = events.iter().filter(|e| matches!(e, Ev::D(_))).collect();
            assert_eq!(data.len(), 3, "idle at {i}: {events:?}");
            let text: String = events
                .iter()
                .filter_map(|e| match e {
                    Ev::T(text) => Some(text.as_str()),
                    Ev::D(_) => None,
                })
                .collect();
            assert_eq!(text, "Hello.\nI'm a very very ... very long line\nNice! You got 60 points!\n", "idle at {i}");
            assert!(warnings.is_empty());
        }
    }

    #[test]
    fn a_marker_counts_only_as_a_whole_line() {
        for line in [
            format!("x{BEGIN}"),
            format!("{BEGIN}x"),
            format!(" {BEGIN}"),
            format!("{BEGIN} "),
            format!("{BEGIN}\rx"),
            format!("\r{BEGIN}"),
            BEGIN[..BEGIN.len() - 1].to_string(),
        ] {
            let stream = format!("\n{line}\n1\n{END}\n");
            let (events, warnings) = parse(stream.as_bytes());
            let expected = vec![t("\n"), t(&line), t("\n"), t("1"), t("\n"), t(END), t("\n")];
            assert_eq!(events, expected, "{line:?}");
            assert!(warnings.is_empty());
        }
        // Text flushed by silence is part of the line, even if the rest looks like BEGIN.
        let stream = format!("{BEGIN}\n1\n{END}\n");
        let (events, warnings) = run(&[Some(b"a"), None, Some(stream.as_bytes())]);
        let expected = [t("a"), t(BEGIN), t("\n"), t("1"), t("\n"), t(END), t("\n")];
        assert_eq!(simple(&events), expected);
        assert!(warnings.is_empty());
        // Only one \r belongs to the terminator.
        let (events, _) = parse(format!("{BEGIN}\r\r\n").as_bytes());
        assert_eq!(events, [t(&format!("{BEGIN}\r")), t("\r\n")]);
    }

    #[test]
    fn a_marker_line_may_end_with_crlf() {
        let stream = format!("a\r\n\r\n{BEGIN}\r\n1\r\n{END}\r\nb\r\n");
        let (events, _) = parse(stream.as_bytes());
        assert_eq!(events, [t("a"), t("\r\n"), d(json!(1)), t("b"), t("\r\n")]);
    }

    #[test]
    fn an_end_marker_outside_a_block_is_text() {
        let (events, warnings) = parse(format!("{END}\n").as_bytes());
        assert_eq!(events, [t(END), t("\n")]);
        assert!(warnings.is_empty());
    }

    #[test]
    fn the_terminator_before_begin_is_swallowed() {
        let cases = [
            // The protocol's way: a terminator, then BEGIN.
            (format!("a\n\n{BEGIN}\n1\n{END}\nb"), vec![t("a"), t("\n"), d(json!(1)), t("b")]),
            // Text without a terminator: the protocol's terminator ends its line.
            (format!("a\n{BEGIN}\n1\n{END}\nb"), vec![t("a"), d(json!(1)), t("b")]),
            // At the very start of the stream, there is nothing to swallow.
            (format!("{BEGIN}\n1\n{END}\n"), vec![d(json!(1))]),
            (format!("\n{BEGIN}\n1\n{END}\n"), vec![d(json!(1))]),
            // Right after END, whose terminator was swallowed with it.
            (format!("\n{BEGIN}\n1\n{END}\n{BEGIN}\n2\n{END}\n"), vec![d(json!(1)), d(json!(2))]),
            (format!("\n{BEGIN}\n1\n{END}\n\n{BEGIN}\n2\n{END}\n"), vec![d(json!(1)), d(json!(2))]),
            // Only one terminator is the protocol's; the others are text.
            (format!("\n\n\n{BEGIN}\n{END}\n"), vec![t("\n"), t("\n")]),
            (format!("a\r\n\n{BEGIN}\n{END}\n"), vec![t("a"), t("\r\n")]),
        ];
        for (stream, expected) in cases {
            let (events, warnings) = parse(stream.as_bytes());
            assert_eq!(events, expected, "{stream:?}");
            assert!(warnings.is_empty());
        }
    }

    #[test]
    fn silence_never_flushes_a_terminator_that_may_be_swallowed() {
        let mut parser = Parser::new(BEGIN.as_bytes(), END.as_bytes());
        let mut out = Vec::new();
        parser.feed(b"a\n", &mut out);
        parser.idle(&mut out);
        assert_eq!(simple(&out), [t("a")], "the terminator waits for the next line");
        parser.feed(&BEGIN.as_bytes()[..10], &mut out);
        parser.idle(&mut out);
        assert_eq!(simple(&out), [t("a")], "a prefix of BEGIN waits too");
        parser.feed(&BEGIN.as_bytes()[10..], &mut out);
        parser.feed(b"\r", &mut out);
        parser.idle(&mut out);
        assert_eq!(simple(&out), [t("a")], "BEGIN and a \\r wait too");
        parser.feed(b"\n7\n", &mut out);
        parser.feed(format!("{END}\n").as_bytes(), &mut out);
        assert_eq!(simple(&out), [t("a"), d(json!(7))]);

        // Once the line leaves BEGIN's path, silence flushes the terminator and the text.
        let mut out = Vec::new();
        let mut parser = Parser::new(BEGIN.as_bytes(), END.as_bytes());
        parser.feed(b"a\n--x", &mut out);
        parser.idle(&mut out);
        assert_eq!(simple(&out), [t("a"), t("\n"), t("--x")]);
        assert!(parser.finish(&mut out).is_empty());
    }

    #[test]
    fn line_terminators_and_lone_carriage_returns() {
        let (events, _) = parse(b"a\r\nb\rc\n\r\n\r\rd\r");
        assert_eq!(events, [t("a"), t("\r\n"), t("b\rc"), t("\n"), t("\r\n"), t("\r\rd\r")]);
        // Silence between \r and \n does not split the terminator.
        let (events, _) = run(&[Some(b"50%\r"), None, Some(b"\n")]);
        assert_eq!(simple(&events), [t("50%"), t("\r\n")]);
        // A progress bar: each \r starts the text after it.
        let (events, _) = run(&[Some(b"\r10%"), None, Some(b"\r20%"), None, Some(b"\r30%\n")]);
        assert_eq!(simple(&events), [t("\r10%"), t("\r20%"), t("\r30%"), t("\n")]);
    }

    #[test]
    fn a_long_line_is_cut_every_64_kib() {
        let line = "a".repeat(3 * MAX_TEXT_CHUNK + 10);
        let stream = format!("{line}\nb\n");
        let expected = [
            t(&line[..MAX_TEXT_CHUNK]),
            t(&line[MAX_TEXT_CHUNK..2 * MAX_TEXT_CHUNK]),
            t(&line[2 * MAX_TEXT_CHUNK..3 * MAX_TEXT_CHUNK]),
            t(&line[3 * MAX_TEXT_CHUNK..]),
            t("\n"),
            t("b"),
            t("\n"),
        ];
        assert_eq!(parse(stream.as_bytes()).0, expected, "in one chunk");
        for size in [1000, MAX_TEXT_CHUNK - 1, MAX_TEXT_CHUNK, MAX_TEXT_CHUNK + 1] {
            let steps: Vec<Option<&[u8]>> = stream.as_bytes().chunks(size).map(Some).collect();
            assert_eq!(simple(&run(&steps).0), expected, "in chunks of {size}");
        }
        // A \r at the 64 KiB mark waits: it may be the start of \r\n.
        for before in [MAX_TEXT_CHUNK - 1, MAX_TEXT_CHUNK] {
            let stream = format!("{}\r\n", "a".repeat(before));
            let steps = [Some(&stream.as_bytes()[..before + 1]), Some(b"\n".as_slice())];
            assert_eq!(simple(&run(&steps).0), [t(&stream[..before]), t("\r\n")], "{before} bytes and a \\r");
        }
        // Exactly 64 KiB and a \r: the \r waits, it may be the start of \r\n.
        let stream = format!("{}\r\n", "a".repeat(MAX_TEXT_CHUNK));
        let steps: Vec<Option<&[u8]>> = stream.as_bytes().chunks(MAX_TEXT_CHUNK + 1).map(Some).collect();
        assert_eq!(simple(&run(&steps).0), [t(&stream[..MAX_TEXT_CHUNK]), t("\r\n")]);
    }

    #[test]
    fn the_64_kib_cut_never_splits_a_character() {
        for offset in 0..4 {
            // Four-byte characters after `offset` ASCII bytes: the cut falls at every position.
            let line = format!("{}{}", "a".repeat(offset), "😀".repeat(MAX_TEXT_CHUNK / 2));
            let stream = format!("{line}\n");
            for size in [stream.len(), 4093, MAX_TEXT_CHUNK] {
                let steps: Vec<Option<&[u8]>> = stream.as_bytes().chunks(size).map(Some).collect();
                let events = simple(&run(&steps).0);
                let text: String = events.iter().map(|e| if let Ev::T(s) = e { s.as_str() } else { "" }).collect();
                assert_eq!(text, stream, "offset {offset}, chunks of {size}");
                assert!(events.len() > 2);
            }
        }
    }

    #[test]
    fn a_long_line_is_cut_by_silence() {
        let (events, _) = run(&[Some(b"abc"), None, Some(b"def"), None, None, Some(b"ghi\n")]);
        assert_eq!(simple(&events), [t("abc"), t("def"), t("ghi"), t("\n")]);
    }

    #[test]
    fn silence_does_not_cut_a_character() {
        let (events, _) = run(&[Some(b"caf\xC3"), None, Some(b"\xA9 \xE2\x82"), None, Some(b"\xAC\n")]);
        assert_eq!(simple(&events), [t("caf"), t("é "), t("€"), t("\n")]);
    }

    #[test]
    fn invalid_utf8_in_text_becomes_replacement_characters() {
        let (events, warnings) = parse(b"caf\xE9 \xFF\xFEok\n\xC3");
        assert_eq!(events, [t("caf\u{FFFD} \u{FFFD}\u{FFFD}ok"), t("\n"), t("\u{FFFD}")]);
        assert!(warnings.is_empty());
    }

    #[test]
    fn lines_of_a_block_that_are_not_json_are_text_with_a_warning() {
        let stream = format!("\n{BEGIN}\n{{\"a\":1}}\nnot json\n\n{{\"b\":2}}\r\n\r\n  [3] \n{BEGIN}\n{END}\nafter\n");
        let (events, warnings) = parse(stream.as_bytes());
        let expected = [
            d(json!({"a": 1})),
            t("not json"),
            t("\n"),
            t("\n"),
            d(json!({"b": 2})),
            t("\r\n"),
            d(json!([3])),
            t(BEGIN),
            t("\n"),
            t("after"),
            t("\n"),
        ];
        assert_eq!(events, expected);
        let lines: Vec<u64> = warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [4, 5, 7, 9]);
        assert_eq!(
            warnings[0].message,
            "stdout line 4 (line 2 of the data block opened at line 2) is not valid JSON \
             (expected ident at column 2); it was kept as text"
        );
        assert!(warnings[1].message.contains("is empty"), "{}", warnings[1].message);
        assert!(warnings[2].message.contains("line 7 (line 5 of the data block"), "{}", warnings[2].message);
    }

    #[test]
    fn a_data_line_keeps_its_json_text_without_surrounding_whitespace() {
        let (events, _) = run(&[Some(format!("{BEGIN}\n \t{{\"a\": [1, 2.50]}}  \n{END}\n").as_bytes())]);
        let ParsedEvent::Data(raw) = &events[0] else { panic!("{events:?}") };
        assert_eq!(raw.get(), r#"{"a": [1, 2.50]}"#);
    }

    #[test]
    fn a_data_line_that_is_not_utf8_is_text_with_a_warning() {
        let stream = [format!("{BEGIN}\n").as_bytes(), b"\"caf\xE9\"\n", format!("{END}\n").as_bytes()].concat();
        let (events, warnings) = parse(&stream);
        assert_eq!(events, [t("\"caf\u{FFFD}\""), t("\n")]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].message.contains("line 2") && warnings[0].message.contains("UTF-8"));
    }

    #[test]
    fn a_stream_that_ends_inside_a_block_keeps_its_data() {
        let (events, warnings) = parse(format!("a\n\n{BEGIN}\n1\n2\n").as_bytes());
        assert_eq!(events, [t("a"), t("\n"), d(json!(1)), d(json!(2))]);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].line, 3);
        assert!(warnings[0].message.contains("unterminated data block"), "{}", warnings[0].message);

        // The last line, without its terminator, is incomplete: text.
        let (events, warnings) = parse(format!("{BEGIN}\n1\n{{\"a\":").as_bytes());
        assert_eq!(events, [d(json!(1)), t("{\"a\":")]);
        assert!(warnings[0].message.contains("line 3, has no line terminator"), "{}", warnings[0].message);

        // So is END without its terminator.
        let (events, warnings) = parse(format!("{BEGIN}\n1\n{END}").as_bytes());
        assert_eq!(events, [d(json!(1)), t(END)]);
        assert_eq!(warnings.len(), 1);

        // BEGIN without its terminator opens nothing.
        let (events, warnings) = parse(format!("a\n{BEGIN}").as_bytes());
        assert_eq!(events, [t("a"), t("\n"), t(BEGIN)]);
        assert!(warnings.is_empty());
    }

    #[test]
    fn old_or_guessed_markers_cannot_forge_data() {
        let forged = format!("\n{OLD_BEGIN}\n{{\"type\": \"score\", \"value\": 100}}\n{OLD_END}\n");
        let (events, warnings) = parse(forged.as_bytes());
        assert!(events.iter().all(|e| matches!(e, Ev::T(_))), "{events:?}");
        assert!(warnings.is_empty());

        // Inside a real block, an old END does not close it: the real END still does.
        let stream = format!("\n{BEGIN}\n1\n{OLD_END}\n{{\"forged\": true}}\n{END}\nafter\n");
        let (events, warnings) = parse(stream.as_bytes());
        assert_eq!(events, [d(json!(1)), t(OLD_END), t("\n"), d(json!({"forged": true})), t("after"), t("\n")]);
        assert_eq!(warnings.len(), 1);

        // With other markers, today's example is all text.
        let mut parser = Parser::new(OLD_BEGIN.as_bytes(), OLD_END.as_bytes());
        let mut out = Vec::new();
        parser.feed(example().as_bytes(), &mut out);
        assert!(parser.finish(&mut out).is_empty());
        assert!(out.iter().all(|e| matches!(e, ParsedEvent::Text(_))));
    }

    #[test]
    fn a_data_line_over_the_cap_is_text_with_a_warning_and_memory_stays_bounded() {
        let long = "x".repeat(MAX_DATA_LINE + 10);
        let stream = format!("{BEGIN}\n{long}\n2\n{END}\n");
        for size in [MAX_TEXT_CHUNK, stream.len()] {
            let mut parser = Parser::new(BEGIN.as_bytes(), END.as_bytes());
            let mut out = Vec::new();
            let mut most = 0;
            for chunk in stream.as_bytes().chunks(size) {
                parser.feed(chunk, &mut out);
                most = most.max(parser.pending.len());
            }
            assert!(most <= MAX_DATA_LINE + 1, "held {most} bytes");
            let warnings = parser.finish(&mut out);
            check_invariants(&out);
            let events = simple(&out);
            assert_eq!(events[events.len() - 2..], [t("\n"), d(json!(2))]);
            let text: String = events.iter().map(|e| if let Ev::T(s) = e { s.as_str() } else { "" }).collect();
            assert_eq!(text, format!("{long}\n"));
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].message.contains("line 2 (line 1 of the data block"), "{}", warnings[0].message);
            assert!(warnings[0].message.contains("longer than"), "{}", warnings[0].message);
        }
    }

    #[test]
    fn text_memory_stays_bounded_by_64_kib() {
        let mut parser = Parser::new(BEGIN.as_bytes(), END.as_bytes());
        let mut out = Vec::new();
        let chunk = vec![b'a'; 4096];
        for _ in 0..1000 {
            parser.feed(&chunk, &mut out);
            assert!(parser.pending.len() < MAX_TEXT_CHUNK);
            out.clear();
        }
    }

    #[test]
    #[should_panic(expected = "SEGI marker")]
    fn a_marker_must_be_one_line() {
        Parser::new(b"begin\n", b"end");
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// A piece of a text line: ordinary characters (lone `\r` among them), or near misses
        /// of the markers.
        fn piece() -> impl Strategy<Value = String> {
            prop_oneof![
                8 => "[a-z é€😀\r{}\"-]{0,12}",
                1 => (0..BEGIN.len()).prop_map(|n| BEGIN[..n].to_string()),
                1 => Just(BEGIN.to_string()),
                1 => Just(format!("{BEGIN}x")),
                1 => Just(END.to_string()),
                1 => Just(OLD_BEGIN.to_string()),
                1 => Just("y".repeat(MAX_TEXT_CHUNK + 5)),
            ]
        }

        fn line_end() -> impl Strategy<Value = &'static str> {
            prop_oneof![Just("\n"), Just("\r\n")]
        }

        /// Text lines; the last may have no terminator (the block after it, if any, ends it).
        fn text() -> impl Strategy<Value = Vec<(String, Option<&'static str>)>> {
            prop::collection::vec(
                (
                    prop::collection::vec(piece(), 0..4).prop_map(|p| p.concat()),
                    prop::option::weighted(0.8, line_end()),
                ),
                0..6,
            )
        }

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
                any::<String>().prop_map(Value::from),
            ];
            leaf.prop_recursive(3, 16, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                    prop::collection::btree_map("[a-z\n\"]{0,4}", inner, 0..4)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        /// A data block: the terminators of step 1, of BEGIN, of each data line, and of END.
        #[derive(Debug, Clone)]
        struct Block {
            before: &'static str,
            after_begin: &'static str,
            lines: Vec<(Value, &'static str)>,
            after_end: &'static str,
        }

        fn block() -> impl Strategy<Value = Block> {
            (line_end(), line_end(), prop::collection::vec((json(), line_end()), 0..4), line_end())
                .prop_map(|(before, after_begin, lines, after_end)| Block { before, after_begin, lines, after_end })
        }

        /// A stream, with the text events and the data it must give.
        fn stream() -> impl Strategy<Value = (Vec<u8>, String, Vec<String>)> {
            prop::collection::vec((text(), prop::option::of(block())), 0..5).prop_map(|segments| {
                let (mut input, mut text_out, mut data_out) = (String::new(), String::new(), Vec::new());
                for (lines, block) in segments {
                    for (content, end) in lines {
                        input += &content;
                        text_out += &content;
                        // A text line must not be BEGIN (pieces and lines without a terminator run together).
                        let line_start = input.rfind('\n').map_or(0, |i| i + 1);
                        if could_be_marker(&input.as_bytes()[line_start..], BEGIN.as_bytes())
                            && input.len() - line_start >= BEGIN.len()
                        {
                            input.push('x');
                            text_out.push('x');
                        }
                        if let Some(end) = end {
                            input += end;
                            text_out += end;
                        }
                    }
                    if let Some(block) = block {
                        if input.ends_with('\r') {
                            // It would join the protocol's terminator, and be swallowed with it.
                            input.push('x');
                            text_out.push('x');
                        }
                        input += &format!("{}{BEGIN}{}", block.before, block.after_begin);
                        for (value, end) in &block.lines {
                            let json = serde_json::to_string(value).unwrap();
                            input += &format!("{json}{end}");
                            data_out.push(json);
                        }
                        input += &format!("{END}{}", block.after_end);
                    }
                }
                (input.into_bytes(), text_out, data_out)
            })
        }

        /// Chunk sizes and whether silence follows each chunk, used in turn.
        fn chunking() -> impl Strategy<Value = Vec<(usize, bool)>> {
            prop::collection::vec((prop_oneof![1usize..8, 1usize..200, 1usize..100_000], any::<bool>()), 1..8)
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            #[test]
            fn text_and_data_give_back_the_stream((input, text, data) in stream(), chunking in chunking()) {
                let mut parser = Parser::new(BEGIN.as_bytes(), END.as_bytes());
                let mut out = Vec::new();
                let mut rest = &input[..];
                for &(size, silence) in chunking.iter().cycle() {
                    if rest.is_empty() {
                        break;
                    }
                    let (chunk, after) = rest.split_at(size.min(rest.len()));
                    parser.feed(chunk, &mut out);
                    if silence {
                        parser.idle(&mut out);
                    }
                    rest = after;
                }
                let warnings = parser.finish(&mut out);
                check_invariants(&out);
                prop_assert!(warnings.is_empty(), "{:?}", warnings);
                let mut got_text = String::new();
                let mut got_data = Vec::new();
                for event in &out {
                    match event {
                        ParsedEvent::Text(t) => got_text += t,
                        ParsedEvent::Data(raw) => got_data.push(raw.get().to_string()),
                    }
                }
                prop_assert_eq!(got_text, text);
                prop_assert_eq!(got_data, data);
            }

            #[test]
            fn chunking_changes_nothing_without_silence(input in stream().prop_map(|s| s.0), size in 1usize..300) {
                let whole = parse(&input);
                let steps: Vec<Option<&[u8]>> = input.chunks(size).map(Some).collect();
                let (events, warnings) = run(&steps);
                prop_assert_eq!(simple(&events), whole.0);
                prop_assert_eq!(warnings, whole.1);
            }
        }
    }
}
