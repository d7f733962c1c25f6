use super::*;
use std::time::Duration;

fn set(pairs: &[(&str, &str)]) -> ParamSet {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn placeholders_expand_and_shell_braces_stay() {
    let t = Template::parse("vllm serve m --port {port} --max-num-seqs {max_num_seqs} --kv {max_num_seqs}000");
    assert_eq!(t.names(), ["port", "max_num_seqs"]);
    let out = t.expand(&set(&[("port", "8123"), ("max_num_seqs", "16")]));
    assert_eq!(out, "vllm serve m --port 8123 --max-num-seqs 16 --kv 16000");
    let shell = Template::parse(r#"echo ${HOME} '{"a": 1}' {{port}} {} {1x} {a-b} $"#);
    assert!(!shell.has_slots(), "{:?}", shell.names());
    assert_eq!(shell.expand(&ParamSet::new()), r#"echo ${HOME} '{"a": 1}' {port} {} {1x} {a-b} $"#);
    let tight = Template::parse("{a}{b}${c}{d}");
    assert_eq!(tight.names(), ["a", "b", "d"]);
    assert_eq!(tight.expand(&set(&[("a", "1"), ("b", "2"), ("d", "4")])), "12${c}4");
    assert_eq!(Template::parse("x {missing} y").expand(&ParamSet::new()), "x {missing} y");
    assert_eq!(Template::parse("ünï {a}").expand(&set(&[("a", "é")])), "ünï é");
}

#[test]
fn the_product_varies_the_first_parameter_slowest() {
    let params = vec![
        ("a".to_string(), vec!["1".to_string(), "2".to_string()]),
        ("b".to_string(), vec!["x".to_string(), "y".to_string(), "z".to_string()]),
    ];
    let sets = cartesian(&params);
    let seen: Vec<String> = sets.iter().map(|s| describe(&["a".into(), "b".into()], s)).collect();
    assert_eq!(seen, ["a=1, b=x", "a=1, b=y", "a=1, b=z", "a=2, b=x", "a=2, b=y", "a=2, b=z"]);
    assert_eq!(cartesian(&[]), vec![ParamSet::new()], "no parameter: one set");
    assert_eq!(describe(&[], &ParamSet::new()), "(no parameters)");
}

#[test]
fn server_params_are_checked() {
    assert_eq!(
        parse_param("max_num_seqs=8, 16,32"),
        Ok(("max_num_seqs".into(), vec!["8".into(), "16".into(), "32".into()]))
    );
    assert!(parse_param("max_num_seqs").unwrap_err().contains("NAME=VALUE"));
    assert!(parse_param("max_num_seqs=").unwrap_err().contains("empty value"));
    assert!(parse_param("max_num_seqs=8,,16").unwrap_err().contains("empty value"));
    assert!(parse_param("port=1,2").unwrap_err().contains("picks"));
    assert!(parse_param("max-num-seqs=1").unwrap_err().contains("not a parameter name"));
}

fn templates(cmd: &str, base: &str) -> Templates {
    Templates { server_cmd: Template::parse(cmd), base_url: Template::parse(base), metrics: Vec::new() }
}

#[test]
fn every_placeholder_is_known_and_every_parameter_used() {
    let (s, g) = (Duration::from_secs(60), Duration::from_secs(10));
    let names = vec!["n".to_string()];
    let sets = vec![set(&[("n", "1")]), set(&[("n", "2")])];
    let ok = templates("sim --port {port} --max-num-seqs {n}", "http://127.0.0.1:{port}").check(
        names.clone(),
        sets.clone(),
        s,
        g,
    );
    let sweep = ok.expect("a good sweep");
    assert_eq!(sweep.values(1, 9000), set(&[("n", "2"), ("port", "9000")]));
    assert_eq!(sweep.describe(0), "n=1");
    let unknown = templates("sim --port {port} --x {typo}", "http://h:{port}").check(names.clone(), sets.clone(), s, g);
    assert!(unknown.unwrap_err().starts_with("--server-cmd: unknown placeholder {typo}"));
    let in_url = templates("sim {n}", "http://h:{prt}").check(names.clone(), sets.clone(), s, g);
    assert!(in_url.unwrap_err().starts_with("--base-url: unknown placeholder {prt}"));
    let unused = templates("sim --port {port}", "http://h:{port}").check(names.clone(), sets.clone(), s, g);
    assert!(unused.unwrap_err().contains("--server-param n: no {n} placeholder"));
    let by_url = templates("sim --port {port}", "http://h:{port}/{n}").check(names.clone(), sets.clone(), s, g);
    assert!(by_url.is_ok(), "a parameter used by --base-url alone is used");
    assert!(templates("  ", "http://h").check(vec![], vec![ParamSet::new()], s, g).unwrap_err().contains("empty"));
    assert!(templates("sim {n}", "http://h").check(names, Vec::new(), s, g).unwrap_err().contains("no parameter set"));
}

#[test]
fn a_sets_file_is_a_json_array_or_json_lines() {
    let (names, sets) = parse_sets(r#"[{"n": 8, "eager": true}, {"n": "16", "eager": false}]"#, "f").unwrap();
    assert_eq!(names, ["eager", "n"]);
    assert_eq!(sets, [set(&[("n", "8"), ("eager", "true")]), set(&[("n", "16"), ("eager", "false")])]);
    let lines = "# sets\n{\"n\": 8}\n\n{\"n\": 0.5}\n";
    assert_eq!(parse_sets(lines, "f").unwrap().1, [set(&[("n", "8")]), set(&[("n", "0.5")])]);
    assert!(parse_sets("[{\"n\": 1}, {\"m\": 2}]", "f").unwrap_err().contains("set 1 has no m"));
    assert!(parse_sets("[{\"n\": null}]", "f").unwrap_err().contains("string, number or boolean"));
    assert!(parse_sets("{\"n\": 1}\nnope\n", "f").unwrap_err().starts_with("f line 2: not a JSON object"));
    assert!(parse_sets("[1]", "f").unwrap_err().contains("is not a JSON object"));
    assert!(parse_sets("[{\"port\": 1}]", "f").unwrap_err().contains("picks"));
    assert!(parse_sets("[{\"n\": \" \"}]", "f").unwrap_err().contains("n is empty"));
}
