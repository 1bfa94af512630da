package store

import (
	"context"
	"errors"
	"strconv"
	"sync"
)

// ErrNotFound is returned when no project has the given id.
var ErrNotFound = errors.New("project not found")

type Project struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Projects is an in-memory project store, safe for concurrent use.
type Projects struct {
	mu     sync.Mutex
	nextID int
	byID   map[string]Project
}

func NewProjects() *Projects {
	return &Projects{byID: make(map[string]Project)}
}

func (s *Projects) Create(_ context.Context, name, description string) (Project, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	p := Project{ID: strconv.Itoa(s.nextID), Name: name, Description: description}
	s.byID[p.ID] = p
	return p, nil
}

func (s *Projects) Update(_ context.Context, id, name, description string) (Project, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[id]; !ok {
		return Project{}, ErrNotFound
	}
	p := Project{ID: id, Name: name, Description: description}
	s.byID[id] = p
	return p, nil
}
