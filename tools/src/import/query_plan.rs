//! What SQLite's plan for a query (`EXPLAIN QUERY PLAN`) says each of its steps reads: the
//! table, how it finds rows, and whether the step runs once per row the query takes.

use rusqlite::Connection;
use std::collections::{HashMap, HashSet};

/// How a step of a plan finds its table's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Every row (`SCAN`).
    Scan,
    /// An automatic index, which SQLite builds from every row each time the query runs.
    AutomaticIndex,
    /// By an index: the rows holding given values of these columns (`rowid` for a rowid
    /// table's own key).
    Search(Vec<String>),
}

/// A step of a plan that reads a table of the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub table: String,
    pub lookup: Lookup,
    /// Runs once per row the query takes: a later table of a join, or a table of a
    /// correlated subquery.
    pub nested: bool,
}

/// The steps of `sql`'s plan that read its tables, in plan order.
pub fn steps(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<Step>> {
    let aliases = aliases(sql);
    let plan = plan(conn, sql)?;
    let by_id: HashMap<i64, (i64, &str)> = plan
        .iter()
        .map(|(id, parent, d)| (*id, (*parent, d.as_str())))
        .collect();
    // Whether a step lies under a correlated subquery; the walk takes at most one step per
    // step of the plan.
    let correlated = |mut id: i64| {
        for _ in 0..plan.len() {
            match by_id.get(&id) {
                Some((_, d)) if d.starts_with("CORRELATED ") => return true,
                Some((parent, _)) => id = *parent,
                None => return false,
            }
        }
        false
    };
    let mut driven: HashSet<i64> = HashSet::new();
    let mut out = Vec::new();
    for (_, parent, detail) in &plan {
        let Some(lookup) = lookup_of(detail) else {
            continue;
        };
        // The first step its parent reads drives it, a subquery's as much as a table's; each
        // later one is read per row taken.
        let first = driven.insert(*parent);
        let Some(table) = detail
            .split_whitespace()
            .nth(1)
            .and_then(|name| aliases.get(name))
        else {
            continue;
        };
        out.push(Step {
            table: table.clone(),
            lookup,
            nested: !first || correlated(*parent),
        });
    }
    Ok(out)
}

/// `sql`'s plan: each step's id, its parent's, and its detail (the parameters bound to
/// empty text, which a plan does not depend on).
pub(super) fn plan(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<(i64, i64, String)>> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let n = stmt.parameter_count();
    let steps = stmt.query_map(
        rusqlite::params_from_iter(std::iter::repeat_n("", n)),
        |r| Ok((r.get(0)?, r.get(1)?, r.get(3)?)),
    )?;
    steps.collect()
}

/// How a step reads its table, from its detail; `None` for a step that reads none.
pub(super) fn lookup_of(detail: &str) -> Option<Lookup> {
    match detail.split_whitespace().next()? {
        "SCAN" => Some(Lookup::Scan),
        "SEARCH" if detail.contains(" AUTOMATIC ") => Some(Lookup::AutomaticIndex),
        // A search by ranges alone (or a skip-scan's `ANY(…)` alone) is counted as a scan.
        "SEARCH" => match constrained(detail) {
            by if by.is_empty() => Some(Lookup::Scan),
            by => Some(Lookup::Search(by)),
        },
        _ => None,
    }
}

/// The columns a `SEARCH` step's constraint holds equal to values, as its plan prints them
/// in its last parenthesized group: `… (event_id=? AND session_id=?) LEFT-JOIN`, or a
/// skip-scan's `(ANY(parent_session_id) AND session_id=?)`; an index named with parentheses
/// comes before it. A range (`x>?`) narrows nothing this counts.
pub(super) fn constrained(detail: &str) -> Vec<String> {
    let (mut depth, mut start, mut inner) = (0usize, 0usize, "");
    for (i, c) in detail.char_indices() {
        match c {
            '(' => {
                if depth == 0 {
                    start = i + 1;
                }
                depth += 1;
            }
            ')' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    inner = &detail[start..i];
                }
            }
            _ => {}
        }
    }
    inner
        .split(" AND ")
        .filter_map(|term| term.trim().strip_suffix("=?"))
        .map(str::to_owned)
        .collect()
}

/// The table of `sql`'s outermost `FROM`.
pub fn outermost(sql: &str) -> Option<String> {
    let mut tokens = tokens(sql);
    tokens.find(|t| t.eq_ignore_ascii_case("FROM"))?;
    tokens.next().filter(|t| is_name(t)).map(str::to_owned)
}

fn tokens(sql: &str) -> impl Iterator<Item = &str> {
    sql.split(|c: char| c.is_whitespace() || c == ',' || c == ')')
        .filter(|t| !t.is_empty())
}

/// The tables `sql` reads, by the name or alias its plan calls them (`FROM t`, `JOIN t a`).
/// A subquery in parentheses is no table: its own tables are named inside it.
pub fn aliases(sql: &str) -> HashMap<String, String> {
    const NOT_ALIAS: [&str; 8] = [
        "WHERE", "ON", "LEFT", "JOIN", "ORDER", "GROUP", "LIMIT", "INNER",
    ];
    let tokens: Vec<&str> = tokens(sql).collect();
    let mut out = HashMap::new();
    for (i, w) in tokens.iter().enumerate() {
        if !(w.eq_ignore_ascii_case("FROM") || w.eq_ignore_ascii_case("JOIN")) {
            continue;
        }
        let Some(table) = tokens.get(i + 1).filter(|t| is_name(t)) else {
            continue;
        };
        out.insert(table.to_string(), table.to_string());
        if let Some(alias) = tokens
            .get(i + 2)
            .filter(|t| is_name(t) && !NOT_ALIAS.iter().any(|k| t.eq_ignore_ascii_case(k)))
        {
            out.insert(alias.to_string(), table.to_string());
        }
    }
    out
}

fn is_name(t: &str) -> bool {
    t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
