"""Widget pages (ipywidgets + plotly) over the pure engines; one module per page, i18n strings in locales/."""
