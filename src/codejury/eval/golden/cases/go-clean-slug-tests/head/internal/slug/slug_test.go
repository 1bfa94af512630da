package slug

import "testing"

func TestMake(t *testing.T) {
	tests := []struct {
		title string
		want  string
	}{
		{"Hello, World!", "hello-world"},
		{"  leading and trailing  ", "leading-and-trailing"},
		{"Go 1.22 release notes", "go-1-22-release-notes"},
		{"Crème brûlée", "crème-brûlée"},
		{"---", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Make(tt.title); got != tt.want {
			t.Errorf("Make(%q) = %q, want %q", tt.title, got, tt.want)
		}
	}
}
