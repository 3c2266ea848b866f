package routing

// kw identifies a token for the classifier: a kind of non-word token, an
// ordinary identifier, or one of the few keywords the rules look at.
type kw uint8

const (
	kwNone    kw = iota // no token
	kwIdent             // identifier or keyword of no interest
	kwQIdent            // quoted identifier
	kwString            // string literal, including dollar quotes
	kwNumber            // number other than 0
	kwZero              // the number 0
	kwParam             // $1
	kwUserVar           // MySQL @x
	kwPunct             // operator, comma, dot, @@, ...
	kwLParen
	kwRParen

	kwAbort
	kwAnalyse
	kwAnalyze
	kwBegin
	kwClose
	kwCommit
	kwCreate
	kwDeallocate
	kwDeclare
	kwDelete
	kwDesc
	kwDescribe
	kwDiscard
	kwDrop
	kwEnd
	kwExecute
	kwExplain
	kwFalse
	kwFetch
	kwFlush
	kwFor
	kwGet
	kwGlobal
	kwHandler
	kwIn
	kwInsert
	kwInto
	kwKey
	kwListen
	kwLocal
	kwLock
	kwMerge
	kwMove
	kwNext
	kwNo
	kwOff
	kwOr
	kwPrepare
	kwPrevious
	kwRelease
	kwReplace
	kwReset
	kwRollback
	kwSavepoint
	kwSelect
	kwSet
	kwShare
	kwShow
	kwSQLCalcFoundRows
	kwStart
	kwTable
	kwTemp
	kwTemporary
	kwUnlisten
	kwUnlock
	kwUpdate
	kwUse
	kwValue
	kwValues
	kwWith
	kwXA
)

// lower folds ASCII upper-case letters to lower case and leaves every other
// byte alone.
var lower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c) + 'a' - 'A'
	}
	return t
}()

// eqLower reports whether s equals the lower-case ASCII word lit, ignoring
// ASCII case. len(s) must be at least len(lit); only its prefix is compared.
func eqLower(s, lit string) bool {
	if len(s) < len(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lower[s[i]] != lit[i] {
			return false
		}
	}
	return true
}

// keywords lists the words the scanner recognises (kwIndex, keywordIn).
var keywords = [...]struct {
	s string // lower case
	k kw
}{
	{"in", kwIn},
	{"no", kwNo},
	{"or", kwOr},
	{"xa", kwXA},
	{"end", kwEnd},
	{"for", kwFor},
	{"get", kwGet},
	{"key", kwKey},
	{"off", kwOff},
	{"set", kwSet},
	{"use", kwUse},
	{"desc", kwDesc},
	{"drop", kwDrop},
	{"into", kwInto},
	{"lock", kwLock},
	{"move", kwMove},
	{"next", kwNext},
	{"show", kwShow},
	{"temp", kwTemp},
	{"with", kwWith},
	{"abort", kwAbort},
	{"begin", kwBegin},
	{"close", kwClose},
	{"fetch", kwFetch},
	{"false", kwFalse},
	{"flush", kwFlush},
	{"local", kwLocal},
	{"merge", kwMerge},
	{"reset", kwReset},
	{"start", kwStart},
	{"share", kwShare},
	{"table", kwTable},
	{"value", kwValue},
	{"commit", kwCommit},
	{"create", kwCreate},
	{"delete", kwDelete},
	{"global", kwGlobal},
	{"insert", kwInsert},
	{"listen", kwListen},
	{"select", kwSelect},
	{"update", kwUpdate},
	{"unlock", kwUnlock},
	{"values", kwValues},
	{"analyze", kwAnalyze},
	{"analyse", kwAnalyse},
	{"declare", kwDeclare},
	{"discard", kwDiscard},
	{"explain", kwExplain},
	{"execute", kwExecute},
	{"handler", kwHandler},
	{"prepare", kwPrepare},
	{"release", kwRelease},
	{"replace", kwReplace},
	{"describe", kwDescribe},
	{"previous", kwPrevious},
	{"rollback", kwRollback},
	{"unlisten", kwUnlisten},
	{"savepoint", kwSavepoint},
	{"temporary", kwTemporary},
	{"deallocate", kwDeallocate},
	{"sql_calc_found_rows", kwSQLCalcFoundRows},
}

// kwHash maps a word of two bytes or more to a slot of kwIndex. It mixes
// the length, the first and the last two bytes with bit 0x20 set (which
// folds ASCII letters to lower case and is harmless for other bytes); the
// constants were chosen so that no two keywords share a slot (init panics
// otherwise, which any test run catches).
func kwHash(s string) uint8 {
	n := len(s)
	return uint8(uint(s[0]|0x20)*18 + uint(s[n-2]|0x20)*49 + uint(s[n-1]|0x20)*46 + uint(n)*63)
}

// kwIndex maps a kwHash slot to 1 + the index of its keyword, or 0.
var kwIndex = func() (t [256]uint8) {
	for i, e := range keywords {
		h := kwHash(e.s)
		if t[h] != 0 {
			panic("routing: keywords " + e.s + " and " + keywords[t[h]-1].s + " share a hash slot")
		}
		t[h] = uint8(i + 1)
	}
	return t
}()

// maxKeywordLen is the length of the longest keyword.
const maxKeywordLen = len("sql_calc_found_rows")

// keywordIn returns the kw of s if it is the keyword in kwIndex slot e.
func keywordIn(e uint8, s string) kw {
	if e == 0 {
		return kwIdent
	}
	w := &keywords[e-1]
	if len(w.s) != len(s) || !eqLower(s, w.s) {
		return kwIdent
	}
	return w.k
}
