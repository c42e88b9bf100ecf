// Correct, in Rust: two i64 read from the whole input.
use std::io::Read;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let v: Vec<i64> = input.split_whitespace().map(|t| t.parse().unwrap()).collect();
    println!("{}", v[0] + v[1]);
}
