package labels

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseError describes why a selector string could not be parsed.
type ParseError struct {
	// Selector is the complete input that was being parsed.
	Selector string
	// Pos is the 0-based byte offset in Selector of the token that caused
	// the error; it equals len(Selector) when the input ended too early.
	Pos int
	// Msg says what was found and what was expected instead, or why a key or
	// value is invalid.
	Msg string
}

// Error implements the error interface.
func (e *ParseError) Error() string {
	return fmt.Sprintf("labels: invalid selector %q: at position %d: %s", e.Selector, e.Pos, e.Msg)
}

// Parse parses a label selector in the Kubernetes string syntax. The grammar
// is:
//
//	selector    = "" | requirement { "," requirement }
//	requirement = "!" KEY
//	            | KEY
//	            | KEY ( "=" | "==" | "!=" ) [ VALUE ]
//	            | KEY ( ">" | "<" ) INTEGER
//	            | KEY ( "in" | "notin" ) "(" [ VALUE ] { "," [ VALUE ] } ")"
//
// Whitespace (space, tab, CR, LF) may surround any token. KEY must be a valid
// label key and VALUE a valid label value; an omitted VALUE is the empty
// string. The empty string (or one of only whitespace) yields [Everything].
// See the package documentation for matching semantics.
//
// Errors are of type *[ParseError] and give the position of the offending
// token along with what was expected there.
func Parse(s string) (Selector, error) {
	p := parser{input: s}
	p.lex()
	reqs, err := p.parse()
	if err != nil {
		return Selector{}, err
	}
	return Everything().Add(reqs...), nil
}

// tokenKind identifies a lexical token of the selector syntax.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokComma
	tokOpenParen
	tokCloseParen
	tokEquals
	tokDoubleEquals
	tokNotEquals
	tokBang
	tokGreater
	tokLess
)

type token struct {
	kind tokenKind
	lit  string
	pos  int
}

// describe renders a token for an error message.
func (t token) describe() string {
	if t.kind == tokEOF {
		return "end of input"
	}
	return strconv.Quote(t.lit)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

func isSpecial(c byte) bool {
	switch c {
	case '=', '!', '(', ')', ',', '<', '>':
		return true
	}
	return false
}

type parser struct {
	input string
	toks  []token
	i     int
}

// lex splits the input into tokens. Every byte sequence lexes: anything that
// is neither whitespace nor one of the symbols = ! ( ) , < > forms an
// identifier, which the parser validates as a key or value later.
func (p *parser) lex() {
	s := p.input
	for i := 0; ; {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			p.toks = append(p.toks, token{kind: tokEOF, pos: len(s)})
			return
		}
		start := i
		var kind tokenKind
		switch c := s[i]; c {
		case ',':
			kind, i = tokComma, i+1
		case '(':
			kind, i = tokOpenParen, i+1
		case ')':
			kind, i = tokCloseParen, i+1
		case '<':
			kind, i = tokLess, i+1
		case '>':
			kind, i = tokGreater, i+1
		case '=':
			if i+1 < len(s) && s[i+1] == '=' {
				kind, i = tokDoubleEquals, i+2
			} else {
				kind, i = tokEquals, i+1
			}
		case '!':
			if i+1 < len(s) && s[i+1] == '=' {
				kind, i = tokNotEquals, i+2
			} else {
				kind, i = tokBang, i+1
			}
		default:
			for i < len(s) && !isSpace(s[i]) && !isSpecial(s[i]) {
				i++
			}
			kind = tokIdent
		}
		p.toks = append(p.toks, token{kind: kind, lit: s[start:i], pos: start})
	}
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) errorf(pos int, format string, args ...any) error {
	return &ParseError{Selector: p.input, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) unexpected(t token, expected string) error {
	return p.errorf(t.pos, "found %s, expected %s", t.describe(), expected)
}

func (p *parser) parse() ([]Requirement, error) {
	if p.peek().kind == tokEOF {
		return nil, nil
	}
	var reqs []Requirement
	for {
		r, err := p.parseRequirement()
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
		switch t := p.next(); t.kind {
		case tokEOF:
			return reqs, nil
		case tokComma:
			// Another requirement must follow; parseRequirement reports
			// a trailing comma.
		default:
			if reqs[len(reqs)-1].op == DoesNotExist && isOperatorToken(t) {
				return nil, p.unexpected(t, `"," or end of input ("!key" takes no operator or value)`)
			}
			return nil, p.unexpected(t, `"," or end of input`)
		}
	}
}

// isOperatorToken reports whether t could start the operator part of a
// requirement.
func isOperatorToken(t token) bool {
	switch t.kind {
	case tokEquals, tokDoubleEquals, tokNotEquals, tokGreater, tokLess:
		return true
	case tokIdent:
		return t.lit == "in" || t.lit == "notin"
	}
	return false
}

func (p *parser) parseRequirement() (Requirement, error) {
	first := p.next()
	negated := false
	keyTok := first
	if first.kind == tokBang {
		negated = true
		keyTok = p.next()
	}
	if keyTok.kind != tokIdent {
		if negated {
			return Requirement{}, p.unexpected(keyTok, "a label key after \"!\"")
		}
		return Requirement{}, p.unexpected(keyTok, `a label key or "!"`)
	}
	key := keyTok.lit
	if err := validateLabelKey(key); err != nil {
		return Requirement{}, p.errorf(keyTok.pos, "%s", strings.TrimPrefix(err.Error(), "labels: "))
	}
	if negated {
		return Requirement{key: key, op: DoesNotExist}, nil
	}

	opTok := p.peek()
	var op Operator
	switch opTok.kind {
	case tokEOF, tokComma:
		return Requirement{key: key, op: Exists}, nil
	case tokEquals:
		op = Equals
	case tokDoubleEquals:
		op = DoubleEquals
	case tokNotEquals:
		op = NotEquals
	case tokGreater:
		op = GreaterThan
	case tokLess:
		op = LessThan
	case tokIdent:
		switch opTok.lit {
		case "in":
			op = In
		case "notin":
			op = NotIn
		}
	}
	if op == "" {
		return Requirement{}, p.unexpected(opTok,
			`an operator ("=", "==", "!=", "in", "notin", ">", "<"), "," or end of input after key `+strconv.Quote(key))
	}
	p.next()

	var vals []string
	valPos := p.peek().pos
	if op == In || op == NotIn {
		var err error
		if vals, err = p.parseValueList(op); err != nil {
			return Requirement{}, err
		}
	} else {
		switch t := p.peek(); t.kind {
		case tokEOF, tokComma:
			vals = []string{""}
		case tokIdent:
			p.next()
			vals = []string{t.lit}
		default:
			return Requirement{}, p.unexpected(t, fmt.Sprintf("a value after %q", opTok.lit))
		}
	}
	r, err := NewRequirement(key, op, vals)
	if err != nil {
		return Requirement{}, p.errorf(valPos, "%s", strings.TrimPrefix(err.Error(), "labels: "))
	}
	return r, nil
}

// parseValueList parses "(" [ VALUE ] { "," [ VALUE ] } ")". Omitted values
// are empty strings, so "()" is the list containing only "".
func (p *parser) parseValueList(op Operator) ([]string, error) {
	if t := p.next(); t.kind != tokOpenParen {
		return nil, p.unexpected(t, fmt.Sprintf(`"(" after %q`, string(op)))
	}
	var vals []string
	for {
		v := ""
		if t := p.peek(); t.kind == tokIdent {
			p.next()
			v = t.lit
		}
		vals = append(vals, v)
		switch t := p.next(); t.kind {
		case tokComma:
		case tokCloseParen:
			return vals, nil
		default:
			return nil, p.unexpected(t, `"," or ")" in value list`)
		}
	}
}
