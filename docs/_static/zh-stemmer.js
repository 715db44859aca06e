// The Chinese site only (docs/zh/conf.py). Sphinx 9 writes `window.Stemmer = ChineseStemmer;` into a Chinese
// site's language_data.js, but ships no Chinese stemmer: its Chinese search stems the English words of a page
// with the English (Snowball) stemmer, whose code language_data.js holds. Without this the page logs
// "ChineseStemmer is not defined" and search breaks.
window.ChineseStemmer = function () { return new window.EnglishStemmer(); };
