// The pipeline file's editor on the control page: line numbers beside the text, and the
// errors a refused Apply gave, each written on its line.
"use strict";

window.FileEditor = {
  // Line numbers beside the text, the refused lines marked and their errors written on them.
  showLines(root, errors) {
    const lines = root.querySelector(".file").value.split("\n").length;
    const gutter = root.querySelector(".gutter");
    gutter.textContent = "";
    const bad = new Set(errors.map((e) => e.line));
    for (let line = 1; line <= lines; line++) {
      const number = document.createElement("div");
      number.textContent = line;
      if (bad.has(line)) number.className = "error";
      gutter.appendChild(number);
    }
    const box = root.querySelector(".line-errors");
    box.textContent = "";
    for (const error of errors) {
      const note = document.createElement("div");
      note.className = "line-error";
      note.dataset.line = error.line;
      note.textContent = `${error.line}:${error.column} ${error.message}`;
      box.appendChild(note);
    }
    FileEditor.placeErrors(root);
  },

  placeErrors(root) {
    const file = root.querySelector(".file");
    const lineHeight = parseFloat(getComputedStyle(file).lineHeight) || 18;
    const top = parseFloat(getComputedStyle(file).paddingTop) || 0;
    root.querySelector(".gutter").scrollTop = file.scrollTop;
    for (const note of root.querySelectorAll(".line-error")) {
      note.style.top = `${top + (Number(note.dataset.line) - 1) * lineHeight - file.scrollTop}px`;
    }
  }
};
