const form = document.querySelector("#search-form");
const results = document.querySelector("#results");
const heading = document.querySelector("#results-heading");

async function runSearch(query) {
  const res = await fetch(`/api/search?q=${encodeURIComponent(query)}`);
  if (!res.ok) {
    throw new Error(`search failed: ${res.status}`);
  }
  return res.json();
}

function renderResults(query, items) {
  heading.innerHTML = `${items.length} results for <strong>${query}</strong>`;
  results.replaceChildren();
  for (const item of items) {
    const li = document.createElement("li");
    const link = document.createElement("a");
    link.href = item.url;
    link.textContent = item.title;
    li.append(link);
    results.append(li);
  }
}

async function search(query) {
  renderResults(query, await runSearch(query));
  history.replaceState(null, "", `?q=${encodeURIComponent(query)}`);
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  search(new FormData(form).get("q")).catch(console.error);
});

// Shareable links: /search?q=... runs the search on load.
const initial = new URLSearchParams(window.location.search).get("q");
if (initial) {
  form.elements.q.value = initial;
  search(initial).catch(console.error);
}
