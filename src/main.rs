fn main() {
    println!("quakecap: under construction");
}
