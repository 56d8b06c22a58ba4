fn main() -> std::process::ExitCode {
    gatehouse::cli::run()
}
