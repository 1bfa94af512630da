const form = document.querySelector("#search-form");
const results = document.querySelector("#results");

async function runSearch(query) {
  const res = await fetch(`/api/search?q=${encodeURIComponent(query)}`);
  if (!res.ok) {
    throw new Error(`search failed: ${res.status}`);
  }
  return res.json();
}

function renderResults(items) {
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

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const query = new FormData(form).get("q");
  renderResults(await runSearch(query));
});
