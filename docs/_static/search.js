// The site's search, on both sites (docs/conf.py), on top of Sphinx's searchtools.js:
//
// * Chinese queries: Sphinx splits a query at spaces and punctuation, so 缩放点积注意力 would be one term. A run
//   of Chinese characters that is not a word of the index is cut into the index's own words, longest first
//   (the index holds jieba's words of every page: site_text.py); characters no word covers are dropped.
// * Snippets: a result's text is taken from the article itself (not the theme's buttons and menus), and each
//   formula reads as its Unicode text (its data-text, site_text.math_data_text), not its TeX source.
(() => {
  const HAN = /\p{Script=Han}/u;
  const SEPARATORS = /[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu;  // searchtools.js's own

  const indexWords = (word, terms) => {
    const pieces = [];
    for (let i = 0; i < word.length;) {
      let length = Math.min(8, word.length - i);
      while (length > 1 && !(word.slice(i, i + length).toLowerCase() in terms)) length -= 1;
      if (length > 1) pieces.push(word.slice(i, i + length));
      i += Math.max(length, 1);
    }
    return pieces;
  };

  // searchtools.js defines splitQuery only where none exists, and calls it once the index is loaded
  window.splitQuery = (query) => {
    const terms = typeof Search !== "undefined" && Search._index ? Search._index.terms : {};
    return query
      .split(SEPARATORS)
      .filter((word) => word)
      .flatMap((word) => (HAN.test(word) && !(word.toLowerCase() in terms) ? indexWords(word, terms) : [word]));
  };

  const articleText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    // a snippet quotes the prose: code cells' source (myst-nb's .cell_input) is left out, as theme text is
    page.querySelectorAll(".headerlink, script, style, button, .prev-next-area, .cell_input").forEach((el) => el.remove());
    page.querySelectorAll("[data-text]").forEach((el) => {
      el.textContent = ` ${el.dataset.text} `;
    });
    const article = page.querySelector("article.bd-article") || page.querySelector('[role="main"]');
    if (!article) return "";
    let part = null;
    try {
      part = anchor ? article.querySelector(anchor) : null;
    } catch (error) {
      part = null;  // an id that is not a valid selector (it starts with a digit): the whole article
    }
    return (part || article).textContent.replace(/\s+/g, " ");
  };

  document.addEventListener("DOMContentLoaded", () => {
    if (typeof Search !== "undefined") Search.htmlToText = articleText;
  });
})();
