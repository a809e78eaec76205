/// `text` padded with spaces to `width`, for the commands' tables. Never cut: an id or type longer than its column
/// shifts the rest of its row instead, so what is printed can always be pasted into the next command.
func column(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}
