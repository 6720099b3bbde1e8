package patch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// JSON applies an RFC 6902 JSON patch — an array of add, remove, replace,
// move, copy and test operations with RFC 6901 pointers ("~1" is "/", "~0"
// is "~", "-" appends to an array) — to doc. It is atomic: if any
// operation fails (a missing path, an index out of bounds, a failed test)
// the error names the operation's index and path and nothing is returned.
func JSON(doc, patch []byte) ([]byte, error) {
	d, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	p, err := decode(patch)
	if err != nil {
		return nil, patchErr("malformed JSON patch: %v", err)
	}
	ops, ok := p.([]any)
	if !ok {
		return nil, patchErr("a JSON patch must be an array of operations, not %s", kindName(p))
	}
	for i, raw := range ops {
		op, err := parseOp(i, raw)
		if err != nil {
			return nil, err
		}
		if d, err = op.apply(d); err != nil {
			return nil, patchErr("json patch operation %d (%s %q): %v", i, op.name, op.path, err)
		}
	}
	return encode(d)
}

// jsonOp is one parsed RFC 6902 operation.
type jsonOp struct {
	name     string
	path     string
	pathToks []string
	from     string
	fromToks []string
	value    any
}

func parseOp(i int, raw any) (jsonOp, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return jsonOp{}, patchErr("json patch operation %d: must be an object, not %s", i, kindName(raw))
	}
	name, ok := m["op"].(string)
	if !ok {
		return jsonOp{}, patchErr("json patch operation %d: missing or non-string \"op\"", i)
	}
	op := jsonOp{name: name}
	switch name {
	case "add", "remove", "replace", "move", "copy", "test":
	default:
		return jsonOp{}, patchErr("json patch operation %d: unknown op %q (want add, remove, replace, move, copy or test)", i, name)
	}
	path, ok := m["path"].(string)
	if !ok {
		return jsonOp{}, patchErr("json patch operation %d (%s): missing or non-string \"path\"", i, name)
	}
	op.path = path
	var err error
	if op.pathToks, err = parsePointer(path); err != nil {
		return jsonOp{}, patchErr("json patch operation %d (%s %q): %v", i, name, path, err)
	}
	switch name {
	case "add", "replace", "test":
		v, ok := m["value"]
		if !ok {
			return jsonOp{}, patchErr("json patch operation %d (%s %q): missing \"value\"", i, name, path)
		}
		op.value = v
	case "move", "copy":
		from, ok := m["from"].(string)
		if !ok {
			return jsonOp{}, patchErr("json patch operation %d (%s %q): missing or non-string \"from\"", i, name, path)
		}
		op.from = from
		if op.fromToks, err = parsePointer(from); err != nil {
			return jsonOp{}, patchErr("json patch operation %d (%s %q): from: %v", i, name, path, err)
		}
	}
	return op, nil
}

// apply performs op on doc and returns the new document.
func (op jsonOp) apply(doc any) (any, error) {
	switch op.name {
	case "add":
		return addAt(doc, op.pathToks, op.value)
	case "remove":
		if len(op.pathToks) == 0 {
			return nil, fmt.Errorf("cannot remove the whole document")
		}
		doc, _, err := removeAt(doc, op.pathToks)
		return doc, err
	case "replace":
		return setAt(doc, op.pathToks, op.value)
	case "move":
		if isProperPrefix(op.fromToks, op.pathToks) {
			return nil, fmt.Errorf("cannot move %q into its own child", op.from)
		}
		if len(op.fromToks) == 0 {
			return doc, nil // from == path == "": a no-op
		}
		doc, v, err := removeAt(doc, op.fromToks)
		if err != nil {
			return nil, fmt.Errorf("from: %w", err)
		}
		return addAt(doc, op.pathToks, v)
	case "copy":
		v, err := getAt(doc, op.fromToks)
		if err != nil {
			return nil, fmt.Errorf("from: %w", err)
		}
		return addAt(doc, op.pathToks, deepCopy(v))
	default: // test
		v, err := getAt(doc, op.pathToks)
		if err != nil {
			return nil, err
		}
		if !equal(v, op.value) {
			return nil, fmt.Errorf("test failed: the value differs")
		}
		return doc, nil
	}
}

// parsePointer splits an RFC 6901 JSON pointer into unescaped tokens; ""
// is the whole document.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("a JSON pointer must be empty or start with \"/\"")
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		if !strings.Contains(t, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			if t[j] != '~' {
				b.WriteByte(t[j])
				continue
			}
			if j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1') {
				return nil, fmt.Errorf("bad escape in JSON pointer: \"~\" must be followed by 0 or 1")
			}
			if t[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		toks[i] = b.String()
	}
	return toks, nil
}

func isProperPrefix(prefix, toks []string) bool {
	if len(prefix) >= len(toks) {
		return false
	}
	for i := range prefix {
		if prefix[i] != toks[i] {
			return false
		}
	}
	return true
}

// arrayIndex parses an array index token; with allowEnd, "-" and n (one
// past the end) are accepted for insertion.
func arrayIndex(tok string, n int, allowEnd bool) (int, error) {
	if tok == "-" {
		if allowEnd {
			return n, nil
		}
		return 0, fmt.Errorf("\"-\" (past the end) may only be used to add")
	}
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.IndexFunc(tok, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("bad array index %q", tok)
	}
	i, err := strconv.Atoi(tok)
	limit := n - 1
	if allowEnd {
		limit = n
	}
	if err != nil || i > limit {
		return 0, fmt.Errorf("array index %s out of bounds (length %d)", tok, n)
	}
	return i, nil
}

// getAt returns the value at toks.
func getAt(doc any, toks []string) (any, error) {
	cur := doc
	for depth, tok := range toks {
		switch n := cur.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("path not found: no member %q at %s", tok, pointerString(toks[:depth]))
			}
			cur = v
		case []any:
			i, err := arrayIndex(tok, len(n), false)
			if err != nil {
				return nil, err
			}
			cur = n[i]
		default:
			return nil, fmt.Errorf("path not found: %s is %s", pointerString(toks[:depth]), kindName(cur))
		}
	}
	return cur, nil
}

// edit walks to the parent of the last token of toks, lets leaf change
// that parent (returning it, possibly reallocated) and stores it back.
// An empty toks means the whole document, which root supplies instead.
func edit(doc any, toks []string, leaf func(parent any, tok string) (any, error), root func() any) (any, error) {
	if len(toks) == 0 {
		if root == nil {
			return nil, fmt.Errorf("cannot change the whole document")
		}
		return root(), nil
	}
	var walk func(node any, depth int) (any, error)
	walk = func(node any, depth int) (any, error) {
		tok := toks[depth]
		if depth == len(toks)-1 {
			return leaf(node, tok)
		}
		switch n := node.(type) {
		case map[string]any:
			child, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("path not found: no member %q at %s", tok, pointerString(toks[:depth]))
			}
			c, err := walk(child, depth+1)
			if err != nil {
				return nil, err
			}
			n[tok] = c
			return n, nil
		case []any:
			i, err := arrayIndex(tok, len(n), false)
			if err != nil {
				return nil, err
			}
			c, err := walk(n[i], depth+1)
			if err != nil {
				return nil, err
			}
			n[i] = c
			return n, nil
		}
		return nil, fmt.Errorf("path not found: %s is %s", pointerString(toks[:depth]), kindName(node))
	}
	return walk(doc, 0)
}

// addAt inserts v at toks (RFC 6902 "add") and returns the new document.
func addAt(doc any, toks []string, v any) (any, error) {
	return edit(doc, toks, func(parent any, tok string) (any, error) {
		switch n := parent.(type) {
		case map[string]any:
			n[tok] = v
			return n, nil
		case []any:
			i, err := arrayIndex(tok, len(n), true)
			if err != nil {
				return nil, err
			}
			n = append(n, nil)
			copy(n[i+1:], n[i:])
			n[i] = v
			return n, nil
		}
		return nil, fmt.Errorf("cannot add a member to %s", kindName(parent))
	}, func() any { return v })
}

// setAt replaces the existing value at toks.
func setAt(doc any, toks []string, v any) (any, error) {
	return edit(doc, toks, func(parent any, tok string) (any, error) {
		switch n := parent.(type) {
		case map[string]any:
			if _, ok := n[tok]; !ok {
				return nil, fmt.Errorf("path not found: no member %q", tok)
			}
			n[tok] = v
			return n, nil
		case []any:
			i, err := arrayIndex(tok, len(n), false)
			if err != nil {
				return nil, err
			}
			n[i] = v
			return n, nil
		}
		return nil, fmt.Errorf("cannot replace a member of %s", kindName(parent))
	}, func() any { return v })
}

// removeAt deletes the value at toks and returns the new document and the
// removed value.
func removeAt(doc any, toks []string) (any, any, error) {
	var removed any
	d, err := edit(doc, toks, func(parent any, tok string) (any, error) {
		switch n := parent.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("path not found: no member %q", tok)
			}
			removed = v
			delete(n, tok)
			return n, nil
		case []any:
			i, err := arrayIndex(tok, len(n), false)
			if err != nil {
				return nil, err
			}
			removed = n[i]
			return slices.Delete(n, i, i+1), nil
		}
		return nil, fmt.Errorf("cannot remove a member of %s", kindName(parent))
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	return d, removed, nil
}

// pointerString formats tokens back into a JSON pointer ("" is shown as
// "the document").
func pointerString(toks []string) string {
	if len(toks) == 0 {
		return "the document"
	}
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return strconv.Quote(b.String())
}
