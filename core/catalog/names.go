package catalog

// MaxNameLength is the longest tool name MCP allows.
const MaxNameLength = 128

// ValidName reports whether name is a tool name as MCP defines it: 1 to
// 128 ASCII letters, digits, "_", "-" and ".". Clients may refuse a list
// holding any other.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !NameByte(name[i]) {
			return false
		}
	}
	return true
}

// NameByte reports whether c may appear in a tool name as MCP defines it.
func NameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
