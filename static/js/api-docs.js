// Swagger UI's dark mode (its stylesheet's html.dark-mode) follows the system's preference, as Concord's pages do.
const darkScheme = window.matchMedia("(prefers-color-scheme: dark)");
const followScheme = () => document.documentElement.classList.toggle("dark-mode", darkScheme.matches);
followScheme();
darkScheme.addEventListener("change", followScheme);
