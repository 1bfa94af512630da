// Package rates converts amounts between currencies for the invoice totals.
package rates

import (
	"context"
	"fmt"
	"net/url"

	"example.com/billing/internal/httpclient"
)

type Service struct {
	fx *httpclient.Client
}

func New(fx *httpclient.Client) *Service {
	return &Service{fx: fx}
}

// Rate returns how many units of `to` one unit of `from` buys today.
func (s *Service) Rate(ctx context.Context, from, to string) (float64, error) {
	var body struct {
		Rate float64 `json:"rate"`
	}
	path := fmt.Sprintf("/v1/rates/%s/%s", url.PathEscape(from), url.PathEscape(to))
	if err := s.fx.GetJSON(ctx, path, &body); err != nil {
		return 0, fmt.Errorf("fx rate %s->%s: %w", from, to, err)
	}
	return body.Rate, nil
}
