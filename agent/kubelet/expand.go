package kubelet

import "strings"

// expand replaces $(VAR) in s by the value vars gives, as Kubernetes does
// for command, args and env values: "$$" is a literal "$" (so "$$(VAR)"
// stays "$(VAR)"), an undefined or unterminated reference is kept as
// written, and a "$" before anything else is kept.
func expand(s string, vars func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	checkpoint := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		b.WriteString(s[checkpoint:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				break
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(s[i+1])
			i++
		}
		checkpoint = i + 1
	}
	b.WriteString(s[checkpoint:])
	return b.String()
}
