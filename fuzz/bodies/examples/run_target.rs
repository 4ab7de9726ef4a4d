//! Runs one target's body on files: `run_target TARGET FILE...`, to look into one input.
//! `MODEL_TRACE=1` makes the model target print each operation as it runs it.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((name, files)) = args.split_first() else {
        eprintln!("usage: run_target TARGET FILE...");
        std::process::exit(2);
    };
    let Some((_, body)) = makalog_fuzz_bodies::TARGETS.iter().find(|(n, _)| n == name) else {
        eprintln!("no target {name}");
        std::process::exit(2);
    };
    for file in files {
        let bytes = std::fs::read(file).expect("an input");
        body(&bytes);
        println!("{file}: passed");
    }
}
