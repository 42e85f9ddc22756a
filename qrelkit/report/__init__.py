"""All presentation: terminal tables, figures and the HTML report. Computes no statistics."""
