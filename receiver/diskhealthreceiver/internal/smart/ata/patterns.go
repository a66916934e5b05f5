package ata

import (
	"fmt"
	"regexp/syntax"
)

// A drive database is read from the host, so what compiling its expressions may cost is bounded,
// not only its bytes and entries: a short counted repeat ("[a-z]{1,1000}", 13 bytes) compiles to
// ~2 000 instructions, and 50 000 such entries (1.9 MB) allocated 29 GiB, held 6.7 GiB of heap and
// took 47 s to three minutes to load. Each expression is parsed first — linear in its length; Go's parser never
// expands a repeat — and its compiled size estimated from the parse tree; the database is refused
// before the expression that would pass the budget is compiled. smartmontools' drivedb.h (7.3:
// 540 entries, 556 distinct expressions, ~26 000 instructions, ~22 000 runes, longest expression
// 1 717 bytes) needs a tenth of it; refusing the file above now allocates ~100 MiB.
const (
	// maxPatternBytes bounds one expression, which bounds what parsing it allocates (a class such as
	// \pL holds 1 292 runes; Go's own limit is 128 MiB of runes per expression).
	maxPatternBytes = 8 << 10
	// maxPatternInsts bounds the estimated compiled size of all of a database's distinct
	// expressions, in instructions (40 bytes each, ~400 bytes allocated each while compiling).
	maxPatternInsts = 1 << 18
	// maxPatternRunes bounds the runes of all character classes and literals.
	maxPatternRunes = 1 << 20
)

// patternCost is what an expression is estimated to cost compiled.
type patternCost struct{ insts, runes int64 }

// costOf estimates an expression's compiled size the way Go's parser does (regexp/syntax calcSize:
// a counted repeat costs its body times its count), without building the expanded program. The
// estimate saturates: anything past the budget is refused whatever its exact size.
func costOf(re *syntax.Regexp) patternCost {
	var c patternCost
	switch re.Op {
	case syntax.OpLiteral:
		c.insts, c.runes = int64(len(re.Rune)), int64(len(re.Rune))
	case syntax.OpCharClass:
		c.insts, c.runes = 1, int64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		c = costOf(re.Sub[0])
		c.insts += 2
	case syntax.OpPlus, syntax.OpQuest:
		c = costOf(re.Sub[0])
		c.insts++
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			s := costOf(sub)
			c.insts, c.runes = c.insts+s.insts, c.runes+s.runes
		}
		if re.Op == syntax.OpAlternate {
			c.insts += int64(len(re.Sub)) - 1
		}
	case syntax.OpRepeat:
		c = costOf(re.Sub[0]) // a repeat shares its body's rune slices
		switch {
		case re.Max == -1 && re.Min == 0: // x*
			c.insts += 2
		case re.Max == -1: // xxx+
			c.insts = 1 + int64(re.Min)*c.insts
		default: // x{2,5} = xx(x(x(x)?)?)?
			c.insts = int64(re.Max)*c.insts + int64(re.Max-re.Min)
		}
	}
	c.insts = min(max(c.insts, 1), maxPatternInsts+1)
	return c
}

// patternBudget checks a database's expressions against the limits above when the database is read;
// they are compiled later, on the first lookup (DriveDB.compiled). Identical expressions are counted
// once (drivedb.h repeats firmware expressions), as they are compiled once.
type patternBudget struct {
	spent patternCost
	seen  map[string]struct{}
}

// check returns an error when expr is not a valid expression or would take the database past its
// budget. It parses expr as anchor(expr) with regexp.Compile's flags (syntax.Perl), so an expression
// it accepts compiles: regexp.Compile's only errors are that parse's (syntax.Compile returns none).
func (b *patternBudget) check(expr string) error {
	if _, ok := b.seen[expr]; ok {
		return nil
	}
	if len(expr) > maxPatternBytes {
		return fmt.Errorf("expression is %d bytes, more than %d", len(expr), maxPatternBytes)
	}
	tree, err := syntax.Parse(anchor(expr), syntax.Perl)
	if err != nil {
		return err
	}
	c := costOf(tree)
	b.spent.insts += c.insts
	b.spent.runes += c.runes
	if b.spent.insts > maxPatternInsts || b.spent.runes > maxPatternRunes {
		return fmt.Errorf("the database's expressions would compile to more than %d instructions or %d runes "+
			"(the budget for compiled patterns, ten times what smartmontools' drivedb.h needs)", maxPatternInsts, maxPatternRunes)
	}
	if b.seen == nil {
		b.seen = map[string]struct{}{}
	}
	b.seen[expr] = struct{}{}
	return nil
}

// anchor makes expr match whole strings, as smartctl matches them.
func anchor(expr string) string { return `^(?:` + expr + `)$` }
