//! The report page: one self-contained HTML file (inline CSS and SVG, no script, and a
//! Content-Security-Policy that forbids loading anything), readable offline.

use super::gather::{Gathered, Session, SessionRead};
use crate::time::{duration, iso8601};
use makalog::format::chain::chain_hex;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

/// Text made safe for HTML content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee;font-variant-numeric:tabular-nums}\
code,.mono{font-family:ui-monospace,monospace;font-size:12px}.clean{color:#2e7d32}.bad{color:#c62828}\
.badge{display:inline-block;padding:2px 8px;border-radius:4px;color:#fff}\
ul.tree{list-style:none;padding-left:18px}svg text{font:11px system-ui,sans-serif}.axis{fill:#555}\
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}";

pub fn page(root: &str, g: &Gathered, made_at: &str) -> String {
    // The sections are most of the page, and the rest grows with the sessions too (heads, the
    // tree): sized up front, a page of many sessions is never copied to grow.
    let sections: usize = g.sessions.iter().map(|s| s.section.len()).sum();
    let mut h = String::with_capacity(sections + 512 * g.sessions.len() + (64 << 10));
    let v = &g.verify;
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"><title>makalog report: {}</title><style>{STYLE}</style></head><body>"#,
        esc(root)
    );
    let status = if v.is_clean() {
        r#"<span class="badge" style="background:#2e7d32">clean</span>"#.to_owned()
    } else {
        format!(
            r#"<span class="badge" style="background:#c62828">{} findings</span>"#,
            v.findings.len()
        )
    };
    let _ = write!(
        h,
        r#"<h1>makalog report: <code>{}</code></h1><p>root id <code>{}</code> · {} sessions · made {} by {} · verify {status}</p>"#,
        esc(root),
        esc(&v.marker.root_id),
        g.sessions.len(),
        esc(made_at),
        esc(&crate::heads::tool())
    );
    findings(&mut h, g);
    heads(&mut h, g);
    tree(&mut h, g);
    h.push_str(r#"<h2 id="claims">Claims</h2>"#);
    claims_table(
        &mut h,
        "Graph intent, subagent-spawn and session-create claims",
        &g.claims,
    );
    for s in &g.sessions {
        h.push_str(&s.section);
    }
    h.push_str("</body></html>\n");
    h
}

fn findings(h: &mut String, g: &Gathered) {
    let v = &g.verify;
    h.push_str(r#"<h2 id="verify">Verify</h2>"#);
    if v.findings.is_empty() {
        h.push_str(r#"<p class="clean">No findings: every header, frame, CRC, sequence number, chain value and seal checks out, and every record decodes as the stores read it.</p>"#);
    } else {
        h.push_str(r#"<ul class="bad">"#);
        for f in &v.findings {
            let _ = write!(h, "<li class=\"finding\"><code>{}</code></li>", esc(f));
        }
        h.push_str("</ul>");
    }
    let notes: Vec<&String> = v.notes.iter().chain(&v.quarantined).collect();
    if !notes.is_empty() {
        h.push_str("<p>Notes (not damage):</p><ul>");
        for n in notes {
            let _ = write!(h, "<li><code>{}</code></li>", esc(n));
        }
        h.push_str("</ul>");
    }
}

fn heads(h: &mut String, g: &Gathered) {
    h.push_str(r#"<h2 id="heads">Heads</h2><p>Record them (<code>makalog heads ROOT --json</code>) and keep them elsewhere: <code>makalog verify COPY --against</code> then tells a log that only grew from one rewritten.</p><table><tr><th>log</th><th>records</th><th>head seq</th><th>chain</th></tr>"#);
    for s in &g.verify.sessions {
        let _ = write!(
            h,
            r##"<tr><td><a href="#session-{id}">{id}</a></td><td>{}</td><td>{}</td><td class="mono">{}</td></tr>"##,
            s.record_count,
            s.head_seq,
            chain_hex(&s.head_chain),
            id = esc(&s.session_id)
        );
    }
    if let Some(c) = &g.verify.claims {
        let _ = write!(
            h,
            r#"<tr><td>claims.log</td><td>{}</td><td>{}</td><td class="mono">{}</td></tr>"#,
            c.record_count,
            c.head_seq,
            chain_hex(&c.head_chain)
        );
    }
    h.push_str("</table>");
}

fn tree(h: &mut String, g: &Gathered) {
    h.push_str(r#"<h2 id="tree">Sessions</h2>"#);
    let known: HashSet<&str> = g.sessions.iter().map(|s| s.id()).collect();
    let mut children: BTreeMap<&str, Vec<&Session>> = BTreeMap::new();
    let mut roots = Vec::new();
    for s in &g.sessions {
        match s.parent() {
            Some(p) if known.contains(&p) && p != s.id() => children.entry(p).or_default().push(s),
            _ => roots.push(s),
        }
    }
    type Children<'a> = BTreeMap<&'a str, Vec<&'a Session>>;
    fn item<'a>(
        h: &mut String,
        s: &'a Session,
        children: &Children<'a>,
        depth: usize,
        listed: &mut HashSet<&'a str>,
    ) {
        if !listed.insert(s.id()) {
            return;
        }
        let v = s.value();
        let _ = write!(
            h,
            r##"<li><a href="#session-{id}">{id}</a> <span style="color:{}">{}</span> · {} · last activity {}"##,
            super::svg::colour(s.status()),
            esc(s.status()),
            esc(v["name"].as_str().unwrap_or_default()),
            v["lastUsedAt"].as_f64().map(iso8601).unwrap_or_default(),
            id = esc(s.id())
        );
        // Nested at most 64 deep (a hostile root's chain of parents would nest as deep as it
        // is long); those below are listed as roots after.
        if let Some(kids) = children.get(s.id()).filter(|_| depth < 64) {
            h.push_str(r#"<ul class="tree">"#);
            for k in kids {
                item(h, k, children, depth + 1, listed);
            }
            h.push_str("</ul>");
        }
        h.push_str("</li>");
    }
    h.push_str(r#"<ul class="tree">"#);
    let mut listed = HashSet::new();
    for s in roots {
        item(h, s, &children, 0, &mut listed);
    }
    // Sessions no root reaches: below the nesting bound, or in a cycle of parents (only a
    // hostile root has one): each listed as a root, every session once.
    for s in &g.sessions {
        item(h, s, &children, 0, &mut listed);
    }
    h.push_str("</ul>");
}

fn claims_table(h: &mut String, title: &str, claims: &[serde_json::Value]) {
    if claims.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h3>{}</h3><table><tr><th>seq</th><th>kind</th><th>claim</th><th>status</th></tr>",
        esc(title)
    );
    for c in claims {
        let k = &c["claim"];
        let s = |key: &str| esc(k[key].as_str().unwrap_or_default());
        let what = match c["type"].as_str().unwrap_or_default() {
            "graph_intent_claim" => format!(
                "graph {} intent {} → {}/{}/{}",
                s("graphId"),
                s("intentId"),
                s("targetSessionId"),
                s("targetTurnId"),
                s("targetRunId")
            ),
            "subagent_spawn_claim" => format!(
                "{} spawned {} (tool call {})",
                s("parentSessionId"),
                s("childSessionId"),
                s("toolCallId")
            ),
            _ => format!("session {} created", s("sessionId")),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"mono\">{what}</td><td>{}</td></tr>",
            c["seq"],
            esc(c["type"].as_str().unwrap_or_default()),
            esc(c["status"].as_str().unwrap_or(""))
        );
    }
    h.push_str("</table>");
}

/// A session's section of the page.
pub fn section(h: &mut String, r: &SessionRead) {
    let s = &r.session;
    let v = s.value();
    let _ = write!(
        h,
        r#"<section class="session" id="session-{id}"><h2>{id} <small style="color:{}">{}</small></h2><p>{} · created {} · last activity {} · {} runs · {} messages · {} invocations</p>"#,
        super::svg::colour(s.status()),
        esc(s.status()),
        esc(v["name"].as_str().unwrap_or_default()),
        v["createdAt"].as_f64().map(iso8601).unwrap_or_default(),
        v["lastUsedAt"].as_f64().map(iso8601).unwrap_or_default(),
        r.runs.len(),
        r.messages.len(),
        r.invocations.len(),
        id = esc(s.id())
    );
    if let Some(why) = &r.unreadable {
        let _ = write!(
            h,
            r#"<p class="bad">Not all of it could be read: <code>{}</code></p>"#,
            esc(why)
        );
    }
    if let Some(svg) = super::svg::timeline(r) {
        h.push_str(&svg);
        h.push_str(r##"<p class="legend"><span><i style="background:#2e7d32"></i>completed</span><span><i style="background:#c62828"></i>failed</span><span><i style="background:#757575"></i>cancelled</span><span><i style="background:#1565c0"></i>running or created</span><span><i style="background:#fbc02d"></i>tool call</span><span><i style="background:#c62828;border-radius:6px"></i>error</span></p>"##);
    }
    if !r.runs.is_empty() {
        h.push_str("<table><tr><th>run</th><th>status</th><th>created (UTC)</th><th>duration</th><th>events</th></tr>");
        for r in &r.runs {
            let rv = r.header.value();
            let took = match (rv["createdAt"].as_f64(), rv["completedAt"].as_f64()) {
                (Some(a), Some(b)) if b >= a => duration(b - a),
                _ => "-".into(),
            };
            let _ = write!(
                h,
                "<tr><td class=\"mono\">{}</td><td>{}{}</td><td>{}</td><td>{took}</td><td>{}</td></tr>",
                esc(r.header.run_id()),
                esc(r.header.status()),
                rv["failureClass"].as_str().map(|f| format!(" ({})", esc(f))).unwrap_or_default(),
                rv["createdAt"].as_f64().map(iso8601).unwrap_or_default(),
                esc(&r.events.join(", "))
            );
        }
        h.push_str("</table>");
    }
    if !r.invocations.is_empty() {
        h.push_str("<h3>Invocations</h3><table><tr><th>invocation</th><th>run</th><th>turn</th><th>opened (UTC)</th><th>outcome</th></tr>");
        for i in &r.invocations {
            let _ = write!(
                h,
                "<tr><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&i.invocation_id),
                esc(&i.run_id),
                esc(&i.turn_id),
                iso8601(i.opened_at),
                i.outcome().unwrap_or("open")
            );
        }
        h.push_str("</table>");
    }
    claims_table(h, "Claims naming this session", &r.claims);
    h.push_str("</section>");
}
