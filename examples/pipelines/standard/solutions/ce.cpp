int main() { return undefined_name; }
