// Package slug turns titles into URL path segments.
package slug

import (
	"strings"
	"unicode"
)

// Make lower-cases title and joins its runs of letters and digits with single dashes:
// "Hello, World!" becomes "hello-world". It returns "" when title has no letters or digits.
func Make(title string) string {
	var b strings.Builder
	pendingDash := false
	for _, r := range title {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if pendingDash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
			pendingDash = false
			continue
		}
		pendingDash = true
	}
	return b.String()
}
