//! The evaluations the HTTP API knows, their events, and the pages of them (decisions 11, 12).
//!
//! A cursor is the number of events before it, as a decimal string; clients treat it as
//! opaque. Reading a page with `after = c` deletes the events before `c`: the spec lets an
//! implementation do so, since a client asks for `c` only once it has what came before. The
//! last page of a finished evaluation ends at `DUMMY_END`; asking for `DUMMY_END` answers an
//! empty page ending at null and deletes the evaluation. Finished evaluations nobody reads
//! expire after the retention time.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;

/// The cursor after the last event of a finished evaluation (segi.txt's implementation details).
pub const DUMMY_END: &str = "DUMMY_END";

/// One page: `{"begin": cursor|null, "end": cursor|null, "data": [events]}`.
#[derive(Debug, Serialize)]
pub struct Page {
    pub begin: Option<String>,
    pub end: Option<String>,
    pub data: Vec<Box<RawValue>>,
}

/// Why a page cannot be given.
#[derive(Debug, PartialEq, Eq)]
pub enum PageError {
    UnknownEvaluation,
    UnknownCursor(String),
}

#[derive(Debug, Default)]
struct Evaluation {
    /// Events not deleted yet; the first is number `first`.
    events: VecDeque<Box<RawValue>>,
    first: u64,
    finished_at: Option<Instant>,
}

impl Evaluation {
    fn total(&self) -> u64 {
        self.first + self.events.len() as u64
    }
}

/// Every live evaluation, by id.
#[derive(Debug)]
pub struct Store {
    evaluations: Mutex<HashMap<String, Arc<Mutex<Evaluation>>>>,
    page_size: usize,
    retention: Duration,
}

impl Store {
    pub fn new(page_size: usize, retention: Duration) -> Store {
        Store { evaluations: Mutex::default(), page_size: page_size.max(1), retention }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Mutex<Evaluation>>>> {
        self.evaluations.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, id: &str) -> Option<Arc<Mutex<Evaluation>>> {
        self.map().get(id).cloned()
    }

    /// Evaluations not deleted yet (running or finished).
    pub fn live(&self) -> usize {
        self.map().len()
    }

    /// Registers a new evaluation.
    pub fn create(&self, id: &str) {
        self.map().insert(id.to_string(), Arc::default());
    }

    /// Appends an event (its JSON) to evaluation `id`, if it is still there.
    pub fn push(&self, id: &str, event: Box<RawValue>) {
        if let Some(evaluation) = self.get(id) {
            evaluation.lock().unwrap_or_else(|p| p.into_inner()).events.push_back(event);
        }
    }

    /// Marks evaluation `id` finished: its retention time starts.
    pub fn finish(&self, id: &str) {
        if let Some(evaluation) = self.get(id) {
            evaluation.lock().unwrap_or_else(|p| p.into_inner()).finished_at = Some(Instant::now());
        }
    }

    /// The page of `id` after `after` (None: from the beginning), deleting what came before.
    pub fn page(&self, id: &str, after: Option<&str>) -> Result<Page, PageError> {
        let evaluation = self.get(id).ok_or(PageError::UnknownEvaluation)?;
        let mut e = evaluation.lock().unwrap_or_else(|p| p.into_inner());
        let unknown = || PageError::UnknownCursor(after.unwrap_or_default().to_string());
        if after == Some(DUMMY_END) {
            // Given out only as the end of a finished evaluation's last page.
            if e.finished_at.is_none() {
                return Err(unknown());
            }
            drop(e);
            self.map().remove(id);
            return Ok(Page { begin: Some(DUMMY_END.into()), end: None, data: Vec::new() });
        }
        let at = match after {
            None => 0,
            Some(text) => text.parse::<u64>().map_err(|_| unknown())?,
        };
        // Before `first`: deleted already; after the last event: never given out.
        if at < e.first || at > e.total() {
            return Err(unknown());
        }
        let deleted = (at - e.first) as usize;
        e.events.drain(..deleted);
        e.first = at;
        let data: Vec<Box<RawValue>> = e.events.iter().take(self.page_size).cloned().collect();
        let next = at + data.len() as u64;
        let end = match e.finished_at {
            Some(_) if next == e.total() => DUMMY_END.to_string(),
            _ => next.to_string(),
        };
        Ok(Page { begin: after.map(String::from), end: Some(end), data })
    }

    /// Deletes finished evaluations older than the retention time; returns how many.
    pub fn expire(&self) -> usize {
        let now = Instant::now();
        let mut map = self.map();
        let before = map.len();
        map.retain(|_, e| {
            let e = e.lock().unwrap_or_else(|p| p.into_inner());
            e.finished_at.is_none_or(|at| now.duration_since(at) < self.retention)
        });
        before - map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u32) -> Box<RawValue> {
        serde_json::value::to_raw_value(&serde_json::json!({"type": "text", "payload": n.to_string()})).unwrap()
    }

    fn texts(page: &Page) -> Vec<String> {
        page.data
            .iter()
            .map(|d| {
                serde_json::from_str::<serde_json::Value>(d.get()).unwrap()["payload"].as_str().unwrap().to_string()
            })
            .collect()
    }

    #[test]
    fn pages_follow_the_cursor_and_end_at_dummy_end() {
        let store = Store::new(2, Duration::from_secs(60));
        store.create("e");
        assert!(matches!(store.page("e", Some(DUMMY_END)), Err(PageError::UnknownCursor(_))), "not finished");
        // Running, nothing yet: an empty page whose end is where to poll again.
        let page = store.page("e", None).unwrap();
        assert_eq!((page.begin.as_deref(), page.end.as_deref(), page.data.len()), (None, Some("0"), 0));
        for n in 0..3 {
            store.push("e", event(n));
        }
        let page = store.page("e", None).unwrap();
        assert_eq!((texts(&page), page.end.as_deref()), (vec!["0".to_string(), "1".into()], Some("2")));
        // The same request again: the same answer.
        let again = store.page("e", None).unwrap();
        assert_eq!((texts(&again), again.end.as_deref()), (texts(&page), Some("2")));
        let page = store.page("e", Some("2")).unwrap();
        assert_eq!((texts(&page), page.end.as_deref()), (vec!["2".to_string()], Some("3")));
        // Still running: no new events, end equals begin.
        let page = store.page("e", Some("3")).unwrap();
        assert_eq!((page.begin.as_deref(), page.end.as_deref(), page.data.len()), (Some("3"), Some("3"), 0));
        store.finish("e");
        let page = store.page("e", Some("3")).unwrap();
        assert_eq!(page.end.as_deref(), Some(DUMMY_END));
        let page = store.page("e", Some(DUMMY_END)).unwrap();
        assert_eq!((page.end, page.data.len()), (None, 0));
        assert_eq!(store.page("e", None).unwrap_err(), PageError::UnknownEvaluation);
    }

    #[test]
    fn the_last_page_ends_at_dummy_end_and_earlier_cursors_are_deleted() {
        let store = Store::new(100, Duration::from_secs(60));
        store.create("e");
        store.push("e", event(0));
        store.push("e", event(1));
        store.finish("e");
        let page = store.page("e", None).unwrap();
        assert_eq!((texts(&page).len(), page.end.as_deref()), (2, Some(DUMMY_END)));
        store.page("e", Some("2")).unwrap();
        assert!(matches!(store.page("e", Some("1")), Err(PageError::UnknownCursor(_))), "deleted");
        assert!(matches!(store.page("e", Some("3")), Err(PageError::UnknownCursor(_))), "never given");
        assert!(matches!(store.page("e", Some("x")), Err(PageError::UnknownCursor(_))));
        assert!(store.page("e", Some(DUMMY_END)).is_ok());
    }

    #[test]
    fn finished_evaluations_expire() {
        let store = Store::new(100, Duration::ZERO);
        store.create("a");
        store.create("b");
        store.finish("a");
        assert_eq!(store.expire(), 1);
        assert_eq!(store.live(), 1);
        assert_eq!(store.page("a", None).unwrap_err(), PageError::UnknownEvaluation);
    }
}
