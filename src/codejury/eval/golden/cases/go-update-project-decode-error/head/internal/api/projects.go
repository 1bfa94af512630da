package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"example.com/tracker/internal/store"
)

type projectRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Handler serves the /projects endpoints.
type Handler struct {
	Projects *store.Projects
}

// CreateProject handles POST /projects.
func (h *Handler) CreateProject(w http.ResponseWriter, r *http.Request) {
	var req projectRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "invalid JSON body", http.StatusBadRequest)
		return
	}
	if req.Name == "" {
		http.Error(w, "name is required", http.StatusBadRequest)
		return
	}
	p, err := h.Projects.Create(r.Context(), req.Name, req.Description)
	if err != nil {
		http.Error(w, "could not create project", http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

// UpdateProject handles PUT /projects/{id}: replaces the name and description.
func (h *Handler) UpdateProject(w http.ResponseWriter, r *http.Request) {
	var req projectRequest
	json.NewDecoder(r.Body).Decode(&req)
	if req.Name == "" {
		http.Error(w, "name is required", http.StatusBadRequest)
		return
	}
	p, err := h.Projects.Update(r.Context(), r.PathValue("id"), req.Name, req.Description)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, "project not found", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "could not update project", http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
