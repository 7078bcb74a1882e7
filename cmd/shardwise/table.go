package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// defaultWidth is the width tables are fitted to when the output is not a terminal and COLUMNS
// does not say: wide enough for the fixed columns and a readable reason, narrow enough for a log
// viewer or a pull-request comment.
const defaultWidth = 100

// minFlexWidth is the narrowest a wrapped column becomes: below it a reason reads a word a line.
const minFlexWidth = 16

// columnGap separates columns.
const columnGap = "  "

// outputWidth is the width to fit w's tables to: the terminal's when w is one, else COLUMNS when
// it is set, else defaultWidth.
func outputWidth(w io.Writer, getenv func(string) string) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}

// table is a plain-text table whose flexible columns (reasons, mostly) wrap at word boundaries so
// the whole fits a width; the other columns keep their values on one line.
type table struct {
	header []string
	// flex marks the columns that wrap when the table is too wide.
	flex []bool
	rows [][]string
}

// newTable starts a table; a header ending in "~" marks a column that may wrap, the "~" dropped.
func newTable(header ...string) *table {
	t := &table{}
	for _, h := range header {
		name, wraps := strings.CutSuffix(h, "~")
		t.header = append(t.header, strings.ToUpper(name))
		t.flex = append(t.flex, wraps)
	}
	return t
}

func (t *table) add(cells ...any) {
	row := make([]string, len(t.header))
	for i, c := range cells {
		if i < len(row) {
			row[i] = strings.Join(strings.Fields(fmt.Sprint(c)), " ")
		}
	}
	t.rows = append(t.rows, row)
}

// widths are the columns' widths to fit width; width 0 means no limit (--wide). When the fixed
// columns leave less than minFlexWidth per flexible column, the table is wider than asked: a fixed
// value is never cut.
func (t *table) widths(width int) []int {
	natural := make([]int, len(t.header))
	for i, h := range t.header {
		natural[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			natural[i] = max(natural[i], utf8.RuneCountInString(c))
		}
	}
	total := len(columnGap) * (len(natural) - 1)
	for _, n := range natural {
		total += n
	}
	if width <= 0 || total <= width {
		return natural
	}
	// Fixed columns keep their widths; the flexible ones share what is left in proportion to their
	// natural widths.
	left := width - len(columnGap)*(len(natural)-1)
	flexTotal := 0
	for i, n := range natural {
		if t.flex[i] {
			flexTotal += n
		} else {
			left -= n
		}
	}
	out := append([]int(nil), natural...)
	if flexTotal == 0 {
		return out
	}
	for i, n := range natural {
		if t.flex[i] {
			out[i] = min(n, max(minFlexWidth, left*n/flexTotal))
		}
	}
	return out
}

// render writes the table fitted to width (0: no limit).
func (t *table) render(w io.Writer, width int) {
	ws := t.widths(width)
	var b strings.Builder
	line := func(cells [][]string) {
		for l := 0; ; l++ {
			more := false
			var parts []string
			for i, c := range cells {
				s := ""
				if l < len(c) {
					s = c[l]
					more = true
				}
				parts = append(parts, s+strings.Repeat(" ", ws[i]-utf8.RuneCountInString(s)))
			}
			if !more {
				return
			}
			b.WriteString(strings.TrimRight(strings.Join(parts, columnGap), " "))
			b.WriteByte('\n')
		}
	}
	wrapRow := func(r []string) [][]string {
		cells := make([][]string, len(r))
		for i, c := range r {
			cells[i] = wrap(c, ws[i])
		}
		return cells
	}
	line(wrapRow(t.header))
	for _, r := range t.rows {
		line(wrapRow(r))
	}
	fmt.Fprint(w, b.String())
}

// wrap breaks s into lines of at most width runes at spaces, cutting a word only when it alone is
// longer than width. An empty s is one empty line.
func wrap(s string, width int) []string {
	if utf8.RuneCountInString(s) <= width || width <= 0 {
		return []string{s}
	}
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(word) > width {
			if cur != "" {
				lines, cur = append(lines, cur), ""
			}
			r := []rune(word)
			lines, word = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case cur == "":
			cur = word
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) <= width:
			cur += " " + word
		default:
			lines, cur = append(lines, cur), word
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
