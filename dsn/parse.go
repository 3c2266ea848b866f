package dsn

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Parse parses a composite DSN (see the package documentation for the
// grammar and the keys). The returned Config has passed Validate, and its
// nodes are filled in as Nodes returns them (default names, roles).
//
// Errors are *Error values; they name the offending key or node and never
// contain a node DSN.
func Parse(s string) (*Config, error) {
	p := parser{lx: lexer{s: s}, c: NewConfig(), seen: make(map[string]int)}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.c, nil
}

// parser turns lexed items into a Config.
type parser struct {
	lx      lexer
	c       *Config
	seen    map[string]int // scalar key (and "primary") -> offset of its item
	nodeOff []int          // offset of each node item: 0 primary, i+1 replica i
}

func (p *parser) run() error {
	p.nodeOff = append(p.nodeOff, -1)
	for {
		it, ok, err := p.lx.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := p.apply(it); err != nil {
			return err
		}
	}
	if _, ok := p.seen[keyDriver]; !ok {
		return newErr(keyDriver, -1, driverRequired)
	}
	if _, ok := p.seen[keyPrimary]; !ok {
		return newErr(keyPrimary, -1, "missing (exactly one primary is required)")
	}
	if err := p.c.Validate(); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Offset < 0 {
			if e.node >= 0 && e.node < len(p.nodeOff) {
				e.Offset = p.nodeOff[e.node]
			} else if off, ok := p.seen[e.Key]; ok {
				e.Offset = off
			}
		}
		return err
	}
	p.c.fillNodes()
	return nil
}

const driverRequired = "required (for example driver=postgres)"

func (p *parser) apply(it item) error {
	key, v := it.key, it.val
	if key == keyReplica {
		return p.node(it, RoleReplica)
	}
	if key == keyDiscover {
		return p.discover(it)
	}
	if first, dup := p.seen[key]; dup {
		if key == keyPrimary {
			return newErr(key, it.off, "duplicate key (exactly one primary is allowed; first one at offset "+strconv.Itoa(first)+")")
		}
		return newErr(key, it.off, "duplicate key (first set at offset "+strconv.Itoa(first)+")")
	}
	p.seen[key] = it.off
	c := p.c
	var err *Error
	switch key {
	case keyDriver:
		c.Driver = v.text
	case keyPrimary:
		return p.node(it, RolePrimary)
	case keyPoolSize:
		c.PoolSize, err = parseInt(key, v)
	case keyMinIdle:
		c.MinIdle, err = parseInt(key, v)
	case keyMaxWaiters:
		c.MaxWaiters, err = parseInt(key, v)
	case keyAcquireTimeout:
		c.AcquireTimeout, err = parseDuration(key, v)
	case keyIdleTimeout:
		c.IdleTimeout, err = parseDuration(key, v)
	case keyMaxLifetime:
		c.MaxLifetime, err = parseDuration(key, v)
	case keyCheckInterval:
		c.CheckInterval, err = parseDuration(key, v)
	case keyProbeTimeout:
		c.ProbeTimeout, err = parseDuration(key, v)
	case keyMaxLag:
		c.MaxLag, err = parseDuration(key, v)
	case keyFailoverWait:
		c.FailoverWait, err = parseDuration(key, v)
	case keyHedgeAfter:
		c.HedgeAfter, err = parseDuration(key, v)
	case keyHedgeBudget:
		c.HedgeBudget, err = parsePercent(key, v)
	case keyCausalWait:
		c.CausalWait, err = parseDuration(key, v)
	case keyCausalFallback:
		c.CausalFallback, err = parseFallback(key, v)
	case keyFollow:
		switch v.text {
		case "on":
			c.FollowPromotion = true
		case "off":
			c.FollowPromotion = false
		default:
			err = newErr(key, -1, "invalid value "+strconv.Quote(v.text)+" (want on or off)")
		}
	case keyReadYourWrites:
		c.ReadYourWrites, err = parseDuration(key, v)
	case keyProbeQuery:
		c.ProbeQuery = v.text
	case keyResetQuery:
		c.ResetQuery = v.text
	case keyBreaker:
		switch v.text {
		case "on":
			c.Breaker = true
		case "off":
			c.Breaker = false
		default:
			err = newErr(key, v.off, "invalid value "+quoteShort(v.text)+" (want on or off)")
		}
	case keyFallback:
		c.Fallback, err = parseFallback(key, v)
	case keyBalance:
		switch v.text {
		case "weighted":
			c.Balance = BalanceWeighted
		case "adaptive":
			c.Balance = BalanceAdaptive
		default:
			err = newErr(key, v.off, "invalid value "+quoteShort(v.text)+" (want weighted or adaptive)")
		}
	case keyReadOnlyTx:
		switch v.text {
		case "replica":
			c.ReadOnlyTx = ReadOnlyTxReplica
		case "primary":
			c.ReadOnlyTx = ReadOnlyTxPrimary
		default:
			err = newErr(key, v.off, "invalid value "+quoteShort(v.text)+" (want replica or primary)")
		}
	}
	if err != nil {
		return err
	}
	return nil
}

// node handles a primary or replica item and its attributes.
func (p *parser) node(it item, role Role) error {
	c := p.c
	idx := 0
	def := primaryName
	if role == RoleReplica {
		if len(c.Replicas) >= MaxReplicas {
			return newErr(keyReplica, it.off, "too many replicas (maximum "+strconv.Itoa(MaxReplicas)+")")
		}
		idx = len(c.Replicas) + 1
		def = defaultReplicaName(idx - 1)
	}
	n := Node{Name: "", DSN: it.val.text, Weight: defaultWeight, Role: role}
	var nameAttr, weightAttr *attr
	for i := range it.attrs {
		a := &it.attrs[i]
		slot := &nameAttr
		if a.key == attrWeight {
			slot = &weightAttr
		}
		if *slot != nil {
			return &Error{Key: a.key, Node: def, Msg: "duplicate node attribute", Offset: a.off, node: idx}
		}
		*slot = a
	}
	display := def
	if nameAttr != nil {
		if nameAttr.val.text == "" {
			return &Error{Key: attrName, Node: def, Msg: "must not be empty", Offset: nameAttr.off, node: idx}
		}
		n.Name = nameAttr.val.text
		display = n.Name
	}
	if weightAttr != nil {
		a := weightAttr
		if role == RolePrimary {
			return &Error{Key: attrWeight, Node: display, Msg: "not allowed on the primary", Offset: a.off, node: idx}
		}
		w, err := strconv.Atoi(a.val.text)
		if err != nil {
			msg := "must be an integer"
			if errors.Is(err, strconv.ErrRange) {
				msg = "out of range, got " + quoteShort(a.val.text)
			}
			return &Error{Key: attrWeight, Node: display, Msg: msg, Offset: a.off, node: idx}
		}
		if msg := weightProblem(w); msg != "" {
			return &Error{Key: attrWeight, Node: display, Msg: msg, Offset: a.off, node: idx}
		}
		n.Weight = w
	}
	if role == RolePrimary {
		c.Primary = n
		p.nodeOff[0] = it.off
		return nil
	}
	c.Replicas = append(c.Replicas, n)
	p.nodeOff = append(p.nodeOff, it.off)
	return nil
}

func parseInt(key string, v value) (int, *Error) {
	n, err := strconv.Atoi(v.text)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, newErr(key, v.off, "out of range, got "+quoteShort(v.text))
		}
		return 0, newErr(key, v.off, "invalid integer "+quoteShort(v.text))
	}
	return n, nil
}

// parseFallback parses fallback's and causal_fallback's primary|error.
func parseFallback(key string, v value) (Fallback, *Error) {
	switch v.text {
	case "primary":
		return FallbackPrimary, nil
	case "error":
		return FallbackError, nil
	}
	return FallbackPrimary, newErr(key, v.off, "invalid value "+quoteShort(v.text)+" (want primary or error)")
}

func parseDuration(key string, v value) (time.Duration, *Error) {
	d, err := time.ParseDuration(v.text)
	if err != nil {
		return 0, newErr(key, v.off, "invalid duration "+quoteShort(v.text)+" (use Go syntax such as 500ms, 2s or 1m30s)")
	}
	return d, nil
}

// lexer splits a composite DSN into items.
type lexer struct {
	s string
	i int
}

// value is a lexed value: unquoted text and the offset of its first byte
// (the opening quote when quoted).
type value struct {
	text string
	off  int
}

// attr is a node attribute (weight=3, name=db2).
type attr struct {
	key string
	off int
	val value
}

// item is one key=value item with its node attributes.
type item struct {
	key   string
	off   int
	val   value
	attrs []attr
}

func isSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

func isAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

// isWordByte reports whether b may appear in a key or attribute name as
// lexed. Only lower-case letters and '_' make up valid keys, but accepting a
// little more gives better "unknown key" errors.
func isWordByte(b byte) bool {
	return isAlnum(b) || b == '_' || b == '-' || b == '.'
}

func (l *lexer) skipSpace() {
	for l.i < len(l.s) && isSpace(l.s[l.i]) {
		l.i++
	}
}

func (l *lexer) word() string {
	start := l.i
	for l.i < len(l.s) && isWordByte(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i]
}

// next returns the next item, or ok == false at the end of the input.
func (l *lexer) next() (it item, ok bool, err *Error) {
	for {
		l.skipSpace()
		if l.i >= len(l.s) {
			return item{}, false, nil
		}
		if l.s[l.i] != ';' {
			break
		}
		l.i++
	}
	it.off = l.i
	key := l.word()
	if key == "" {
		return it, false, syntaxErr("", it.off, "expected key=value")
	}
	if l.i >= len(l.s) || l.s[l.i] != '=' {
		if isKnownKey(key) {
			return it, false, l.missingEq(key, it.off)
		}
		if err := unknownKey(key, it.off); err.Key != "" {
			return it, false, err
		}
		return it, false, syntaxErr("", it.off, "expected key=value")
	}
	if !isKnownKey(key) {
		return it, false, unknownKey(key, it.off)
	}
	it.key = key
	isNode := key == keyPrimary || key == keyReplica || key == keyDiscover
	l.i++ // '='
	if err := l.noSpaceAfterEq(key); err != nil {
		return it, false, err
	}
	if it.val, err = l.value(key); err != nil {
		return it, false, err
	}
	for {
		// After a value: the end, ';' or whitespace then attributes.
		if l.i >= len(l.s) || l.s[l.i] == ';' {
			return it, true, nil
		}
		if !isSpace(l.s[l.i]) {
			return it, false, syntaxErr(key, l.i, "unexpected text after closing quote")
		}
		l.skipSpace()
		if l.i >= len(l.s) || l.s[l.i] == ';' {
			return it, true, nil
		}
		a, err := l.attribute(key, isNode)
		if err != nil {
			return it, false, err
		}
		it.attrs = append(it.attrs, a)
	}
}

// attribute lexes a node attribute following the value of key.
func (l *lexer) attribute(key string, isNode bool) (attr, *Error) {
	a := attr{off: l.i}
	name := l.word()
	switch {
	case name == "":
		// Text of unknown nature: do not quote it, it may be part of a
		// mis-quoted node DSN.
	case isKnownKey(name):
		return a, syntaxErr(key, a.off, "missing ';' before "+strconv.Quote(name))
	case name == attrWeight || name == attrName || name == attrEvery:
		if !isNode {
			return a, newErr(name, a.off, "attributes are only allowed on primary, replica and discover")
		}
		if name == attrEvery && key != keyDiscover {
			return a, newErr(name, a.off, "only allowed on discover")
		}
		if l.i >= len(l.s) || l.s[l.i] != '=' {
			return a, l.missingEq(name, a.off)
		}
		l.i++
		if err := l.noSpaceAfterEq(name); err != nil {
			return a, err
		}
		v, err := l.value(name)
		if err != nil {
			return a, err
		}
		a.key, a.val = name, v
		return a, nil
	case isNode:
		if s := suggest(name, knownAttrs); s != "" {
			return a, newErr(name, a.off, "unknown node attribute (did you mean "+strconv.Quote(s)+"?)")
		}
	}
	if isNode {
		if key == keyDiscover {
			return a, syntaxErr(key, a.off, "unexpected text after discover source (quote a source containing spaces; its attributes are weight, name and every)")
		}
		return a, syntaxErr(key, a.off, "unexpected text after node DSN (quote a node DSN containing spaces; node attributes are weight and name)")
	}
	return a, syntaxErr(key, a.off, "unexpected text after value (quote a value containing spaces)")
}

// missingEq returns the error for a known key or attribute name at off that
// is not directly followed by '='.
func (l *lexer) missingEq(key string, off int) *Error {
	j := l.i
	for j < len(l.s) && isSpace(l.s[j]) {
		j++
	}
	if j > l.i && j < len(l.s) && l.s[j] == '=' {
		return syntaxErr(key, off, "whitespace before '=' is not allowed")
	}
	return syntaxErr(key, off, "missing '='")
}

// noSpaceAfterEq rejects whitespace right after the '=' of key: "key= x"
// would otherwise be ambiguous between an empty value followed by
// attributes and the value x.
func (l *lexer) noSpaceAfterEq(key string) *Error {
	if l.i < len(l.s) && isSpace(l.s[l.i]) {
		return syntaxErr(key, l.i, "whitespace after '=' is not allowed (write "+key+"='' for an empty value)")
	}
	return nil
}

// value lexes a bare or single-quoted value. The key is used in errors
// only; error messages never quote the value itself.
func (l *lexer) value(key string) (value, *Error) {
	s := l.s
	v := value{off: l.i}
	if l.i < len(s) && s[l.i] == '\'' {
		l.i++
		start := l.i
		var b *strings.Builder
		for {
			if l.i >= len(s) {
				return v, syntaxErr(key, v.off, "unterminated quoted value")
			}
			c := s[l.i]
			if c == '\'' {
				break
			}
			if c == '\\' && l.i+1 < len(s) && (s[l.i+1] == '\'' || s[l.i+1] == '\\') {
				if b == nil {
					b = new(strings.Builder)
					b.WriteString(s[start:l.i])
				}
				b.WriteByte(s[l.i+1])
				l.i += 2
				continue
			}
			if b != nil {
				b.WriteByte(c)
			}
			l.i++
		}
		if b != nil {
			v.text = b.String()
		} else {
			v.text = s[start:l.i]
		}
		l.i++ // closing quote
		return v, nil
	}
	for l.i < len(s) && !isSpace(s[l.i]) && s[l.i] != ';' {
		if s[l.i] == '\'' {
			return v, syntaxErr(key, l.i, "quote inside an unquoted value (quote the whole value)")
		}
		l.i++
	}
	v.text = s[v.off:l.i]
	return v, nil
}

// unknownKey returns the error for an unknown key. The key is quoted only
// when it is a plausible typo of a known key: arbitrary text might be a
// fragment of a mis-quoted node DSN (a password) and must not be echoed.
func unknownKey(key string, off int) *Error {
	if s := suggest(key, knownKeys); s != "" {
		return newErr(key, off, "unknown key (did you mean "+strconv.Quote(s)+"?)")
	}
	return newErr("", off, "unknown key (known keys: "+strings.Join(knownKeys, ", ")+")")
}

// parsePercent parses a percentage, "30%" or "30" (decimals allowed).
func parsePercent(key string, v value) (float64, *Error) {
	f, perr := strconv.ParseFloat(strings.TrimSuffix(v.text, "%"), 64)
	if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, newErr(key, v.off, "invalid percentage "+quoteShort(v.text)+" (want e.g. 10%)")
	}
	return f, nil
}
