//! Imports flow one way: no cycle among the crate's top-level modules (`src/*.rs`,
//! `src/*/`), counting every `crate::…` path in code outside comments and outside the
//! `#[cfg(test)]` module that ends a file. The graph is printed (`--nocapture`).
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file of `src/` belongs to (None: the crate roots).
fn module_of(rel: &Path) -> Option<String> {
    let mut parts = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    let first = parts.next()?;
    let name = if rel.components().count() == 1 {
        first.strip_suffix(".rs")?.to_string()
    } else {
        first
    };
    (name != "lib" && name != "main").then_some(name)
}

/// The modules named by `crate::NAME` in `code`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        // Not `quakecap_crate::` or `some_crate::`.
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[i + 7..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g = Graph::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let Some(m) = module_of(rel) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).expect("read source");
        let text = match text.find("#[cfg(test)]\nmod ") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let to = g.entry(m.clone()).or_default();
        to.extend(crate_paths(&code).into_iter().filter(|t| *t != m));
    }
    g
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_checker_finds_a_cycle() {
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(cycles(&g), vec![vec!["a", "b", "c"]]);
    g.get_mut("c").unwrap().remove("a");
    assert!(cycles(&g).is_empty());
    assert_eq!(
        crate_paths("use crate::q3::svc; x = my_crate::y; crate::flow::Dir"),
        BTreeSet::from(["flow".to_string(), "q3".to_string()])
    );
}

#[test]
fn imports_flow_one_way() {
    let g = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(g.len() >= 15, "modules: {:?}", g.keys());
    for (m, to) in &g {
        eprintln!(
            "{m} -> {}",
            to.iter().cloned().collect::<Vec<_>>().join(" ")
        );
    }
    let c = cycles(&g);
    assert!(c.is_empty(), "import cycles among modules: {c:?}");
    // The decoders know no analysis and not each other.
    for game in ["q3", "qw"] {
        let to = &g[game];
        for above in [
            "analysis",
            "gameevent",
            "sink",
            "pipeline",
            "event",
            "q3",
            "qw",
        ] {
            assert!(
                above == game || !to.contains(above),
                "{game} imports {above}"
            );
        }
    }
}
